// Command rank scores every entity for each query and writes the filtered rank of each
// hard answer (see the README for the ranks schema); with --ask it answers queries
// written by names and prints their top K, known answers told from predictions.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/shard"
)

func main() {
	// SIGINT and SIGTERM end the run at once, removing unfinished outputs (package outfile).
	outfile.Main("rank", func(ctx context.Context) error { return cliargs.Run(ctx, app(), os.Args) })
}

func app() *cli.App {
	return &cli.App{
		Name:    "rank",
		Version: cliargs.Version(),
		Usage:   "filtered ranks of every hard answer (one row per query and hard answer)",
		UsageText: "rank --checkpoint FILE --queries FILE|- -o FILE|- [options]\n" +
			"rank --checkpoint FILE --data DIR --ask QUERY | --ask-file FILE|- [options]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checkpoint", Required: true, Usage: "trained model `FILE` (its entity table)"},
			&cli.StringFlag{Name: "queries", Usage: "queries artifact `FILE`, for the easy/hard answers (- for stdin)", DefaultText: cliargs.RequiredWhen("unless --ask or --ask-file")},
			&cli.StringFlag{Name: "cones", Usage: "cones artifact `FILE` from embed (- for stdin)", DefaultText: "embed the queries here"},
			&cli.IntFlag{Name: "top", Usage: "also write each query's `K` best entities and their scores (K ≥ 1); with --ask, how many to list", DefaultText: "none; 10 with --ask"},
			&cli.StringFlag{Name: "data", Usage: "dataset `DIR`, to name the top-K entities (needs --top; must be the checkpoint's KG); with --ask, its names, labels and known answers", DefaultText: cliargs.RequiredWhen("with --ask or --ask-file")},
			&cli.StringFlag{Name: "ask", Usage: "a `QUERY` by names or ids, e.g. \"(Dominican_Republic,(/location/country/form_of_government,))\": print its top K, known answers marked (see the README)"},
			&cli.StringFlag{Name: "ask-file", Usage: "a `FILE` of such queries, one a line (# comments; - for stdin)"},
			&cli.StringFlag{Name: "known", Value: pipeline.KnownTrain, Usage: "with --ask: the `GRAPH` whose answers are known, train or train+valid"},
			&cli.BoolFlag{Name: "exclude-known", Usage: "with --ask: list predictions only (the top K of the entities that are not known answers)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "`DEVICE`: cpu or cuda (cuda: embedding, scoring and ranking on the GPU, only the ranks coming back; --cones are uploaded, --top downloads each batch's scores and picks the top K on the host; --ask and --ask-file score on the CPU)"},
			&cli.IntFlag{Name: "workers", Usage: "`N` goroutines ranking queries", DefaultText: "every core"},
			&cli.IntFlag{Name: "batch", Usage: "`N` queries scored together, at least 1; more than the queries is taken as all of them (on the CPU the entity table stays in cache; on CUDA a batch's scores live on the device, and the batches are pipelined)", DefaultText: "16 on the CPU, 512 on CUDA"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "ranks artifact `FILE` (- for an IPC stream on stdout); with --ask, the answers artifact", DefaultText: cliargs.RequiredWhen("unless --ask or --ask-file")},
			&cli.StringFlag{Name: "shard", Usage: "rank only shard `i/n` of the queries (0 <= i < n; whole batches; rows keep the queries' ids); metrics takes the n shards as one run"},
			&cli.StringFlag{Name: "profile", Usage: "write a device profile of the run to `FILE` (a Markdown roofline table per kernel, per batch) and its CSV beside it (.csv for .md); needs --device cuda"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			asking := c.IsSet("ask") || c.IsSet("ask-file")
			if err := checkMode(c, asking); err != nil {
				return err
			}
			// An empty value would pass for the flag's default (--device '' for cpu,
			// --cones '' for embedding the queries here) or fail as an unnamed path.
			if err := cliargs.NotEmpty(c, c.App.Flags); err != nil {
				return err
			}
			var sh shard.Spec
			if c.IsSet("shard") {
				s, err := shard.Parse(c.String("shard"))
				if err != nil {
					return err
				}
				sh = s
			}
			if err := cliargs.Positive(c, "workers", "every core"); err != nil {
				return err
			}
			if err := cliargs.Positive(c, "top", "none, or 10 with --ask"); err != nil {
				return err
			}
			dev, err := device.Open(c.String("device"), c.Int("workers"))
			if err != nil {
				return err
			}
			batch := c.Int("batch")
			if c.IsSet("batch") && batch <= 0 {
				return fmt.Errorf("--batch %d: want a positive number of queries", batch)
			}
			if batch == 0 && c.String("device") == "cuda" {
				batch = 512
			}
			var log io.Writer = os.Stderr
			if c.Bool("quiet") {
				log = nil
			}
			if asking {
				return pipeline.Ask(pipeline.AskConfig{Checkpoint: c.String("checkpoint"), Data: c.String("data"), Ask: c.String("ask"),
					AskFile: c.String("ask-file"), TopK: topOr(c, 10), Known: c.String("known"), ExcludeKnown: c.Bool("exclude-known"),
					Output: c.String("output"), Stdout: outfile.Stdout, Kernels: dev.Kernels, Workers: c.Int("workers"), Batch: batch, Log: log, Warnings: os.Stderr})
			}
			return pipeline.Rank(pipeline.RankConfig{Checkpoint: c.String("checkpoint"), Queries: c.String("queries"),
				Cones: c.String("cones"), Output: c.String("output"), TopK: c.Int("top"), Data: c.String("data"),
				Kernels: dev.Kernels, Device: dev.Rank, Workers: c.Int("workers"), Batch: batch, Shard: sh, Log: log, Warnings: os.Stderr,
				Profile: c.String("profile"), ProfileCommand: strings.Join(append([]string{"rank"}, os.Args[1:]...), " ")})
		},
	}
}

// checkMode refuses flags of the other mode: --ask and --ask-file list a top K of their
// own queries; without them rank ranks a queries artifact into a ranks artifact.
func checkMode(c *cli.Context, asking bool) error {
	if asking {
		for _, f := range []string{"queries", "cones", "shard", "profile"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s is not used with --ask or --ask-file, which rank the queries they give", f)
			}
		}
		if c.IsSet("ask") && c.String("ask") == "" {
			return fmt.Errorf("--ask \"\": an empty query")
		}
		return nil
	}
	for _, f := range []string{"known", "exclude-known"} {
		if c.IsSet(f) {
			return fmt.Errorf("--%s needs --ask or --ask-file", f)
		}
	}
	var missing []string
	for _, f := range [][2]string{{"queries", "--queries"}, {"output", "-o"}} {
		if !c.IsSet(f[0]) {
			missing = append(missing, f[1])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s required: rank ranks a queries artifact into a ranks artifact (or asks a question: --ask QUERY --data DIR)", strings.Join(missing, " and "))
	}
	return nil
}

// topOr is --top, or def when it is not given.
func topOr(c *cli.Context, def int) int {
	if c.IsSet("top") {
		return c.Int("top")
	}
	return def
}
