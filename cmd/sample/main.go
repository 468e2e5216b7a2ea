// Command sample grounds BetaE query structures on a KG, or imports a published BetaE
// query pickle, and writes a queries artifact (Arrow IPC). See the README for the schema.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/shard"
)

func main() {
	// SIGINT and SIGTERM end the run at once, removing unfinished outputs (package outfile).
	outfile.Main("sample", func(ctx context.Context) error { return cliargs.Run(ctx, app(), os.Args) })
}

// dataFlags are the flags of a command that reads a dataset's split (splits: which ones it
// takes, for the help) and writes a queries artifact.
func dataFlags(splits string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "data", Required: true, Usage: "dataset `DIR` (train/valid/test.tsv[.gz], optional entities.tsv, relations.tsv)"},
		&cli.StringFlag{Name: "split", Required: true, Usage: "`SPLIT`: " + splits},
		&cli.StringFlag{Name: "format", Value: "auto", Usage: "triple `FORMAT`: ids (BetaE ids, both directions), names (raw strings) or auto"},
		&cli.StringFlag{Name: "dataset", Usage: "dataset `NAME` written to the artifact", DefaultText: "the folder's name"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output `FILE` (- for an IPC stream on stdout)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr (warnings still go there)"},
	}
}

// source is the dataset of the command's flags; an explicit --dataset ” is refused (left
// out, the name is the folder's).
func source(c *cli.Context) (sample.Source, error) {
	if c.IsSet("dataset") && c.String("dataset") == "" {
		return sample.Source{}, fmt.Errorf("--dataset '': the dataset name is blank (leave --dataset out for the folder's name)")
	}
	return sample.Source{Dir: c.String("data"), Format: kg.Format(c.String("format")), Dataset: c.String("dataset"), Warnings: os.Stderr}, nil
}

func logWriter(c *cli.Context) io.Writer {
	if c.Bool("quiet") {
		return io.Discard
	}
	return os.Stderr
}

func app() *cli.App {
	return &cli.App{
		Name:    "sample",
		Version: cliargs.Version(),
		Usage:   "make BetaE-style query files (queries artifacts) from a KG",
		Commands: []*cli.Command{
			{
				Name:  "generate",
				Usage: "ground query structures on the split's graph with BetaE's rules",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "types", Usage: "comma-separated type names or structure notations (`TYPES`)", DefaultText: "the split's BetaE types"},
					&cli.StringFlag{Name: "count", Usage: "per-type counts, `TYPE=N,...`", DefaultText: "BetaE's"},
					&cli.IntFlag{Name: "max-answers", Usage: "answer cap `N`, at least 1", DefaultText: "80 on valid/test, none on train"},
					&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "random seed `N`; the same seed gives byte-identical output"},
					&cli.IntFlag{Name: "workers", Usage: "`N` worker goroutines; does not change the output", DefaultText: "every core"},
					&cli.StringFlag{Name: "shard", Usage: "sample shard `i/n` of the run (0 <= i < n): every nth attempt block of each type, about 1/n of the work; sample merge joins the n shards into the unsharded file"},
					&cli.Float64Flag{Name: "shard-margin", Value: sample.DefaultShardMargin, Usage: "with --shard: candidates to sample beyond the shard's share of each type, as a `FRACTION` (0.5: 50% more), for those that repeat another shard's; merge asks for more when it runs short"},
				}, dataFlags("train, valid or test")...),
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags, "types", "count", "shard", "dataset"); err != nil {
						return err
					} // those four say what they want themselves
					if err := cliargs.Positive(c, "workers", "every core"); err != nil {
						return err
					}
					opts, err := sample.FlagValues{
						Types: c.String("types"), TypesSet: c.IsSet("types"), Count: c.String("count"), CountSet: c.IsSet("count"),
						MaxAnswers: c.Int("max-answers"), MaxAnswersSet: c.IsSet("max-answers"), Seed: c.Uint64("seed"), Workers: c.Int("workers"),
					}.Options()
					if err != nil {
						return err
					}
					if c.IsSet("shard") {
						if opts.Shard, err = shard.Parse(c.String("shard")); err != nil {
							return err
						}
					}
					if c.IsSet("shard-margin") {
						if !c.IsSet("shard") {
							return fmt.Errorf("--shard-margin: give it with --shard i/n (it sets how much a shard samples beyond its share)")
						}
						if m := c.Float64("shard-margin"); !(m > 0) || math.IsInf(m, 1) {
							// 0 would mean the default to Options; a user who typed it means no margin.
							return fmt.Errorf("--shard-margin %v: want a fraction above 0 (0.5: sample 50%% more than the shard's share)", m)
						}
						opts.ShardMargin = c.Float64("shard-margin")
					}
					src, err := source(c)
					if err != nil {
						return err
					}
					return sample.GenerateToFile(c.Context, src, c.String("split"), opts, c.String("output"), logWriter(c))
				},
			},
			{
				Name:  "import-betae",
				Usage: "answer a published BetaE query pickle on the split's graphs",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "pickle", Required: true, Usage: "BetaE query pickle `FILE` (e.g. test-queries.pkl)"},
				}, dataFlags("valid or test (train has no hard answers)")...),
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags, "dataset"); err != nil {
						return err
					}
					src, err := source(c)
					if err != nil {
						return err
					}
					return sample.ImportToFile(src, c.String("split"), c.String("pickle"), c.String("output"), logWriter(c))
				},
			},
			{
				Name:      "merge",
				Usage:     "join the n shard files of one sample generate --shard run into its queries file",
				ArgsUsage: "SHARD...",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output `FILE` (- for an IPC stream on stdout)"},
					&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no per-type statistics on stderr"},
				},
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
						return err
					}
					if c.NArg() == 0 {
						return fmt.Errorf("merge: give the shard files of one run")
					}
					return sample.MergeShards(c.Args().Slice(), c.String("output"), logWriter(c))
				},
			},
			{
				Name:      "stats",
				Usage:     "print query counts and mean easy/hard answers per type of queries artifacts",
				ArgsUsage: "FILE...",
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return fmt.Errorf("stats: give one or more queries files")
					}
					return sample.PrintStats(outfile.Stdout, c.Args().Slice())
				},
			},
			synthCommand(), // synth.go
		},
	}
}
