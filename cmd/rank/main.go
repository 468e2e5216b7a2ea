// Command rank scores every entity for each query and writes the filtered rank of each
// hard answer (see the README for the ranks schema).
package main

import (
	"context"
	"fmt"
	"github.com/rocone/rocone/pkg/cliargs"
	"io"
	"os"

	"github.com/urfave/cli/v2"

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
		Name:  "rank",
		Usage: "filtered ranks of every hard answer (one row per query and hard answer)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checkpoint", Required: true, Usage: "trained model `FILE` (its entity table)"},
			&cli.StringFlag{Name: "queries", Required: true, Usage: "queries artifact `FILE`, for the easy/hard answers (- for stdin)"},
			&cli.StringFlag{Name: "cones", Usage: "cones artifact `FILE` from embed (- for stdin); default: embed the queries here"},
			&cli.IntFlag{Name: "top", Usage: "also write each query's `K` best entities and their scores (K ≥ 1)"},
			&cli.StringFlag{Name: "data", Usage: "dataset `DIR`, to name the top-K entities (needs --top; must be the checkpoint's KG)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda (cuda: embedding, scoring and ranking on the GPU; with --cones or --top, the queries' cones or scores pass through the host)"},
			&cli.IntFlag{Name: "workers", Usage: "goroutines ranking queries (default: every core)"},
			&cli.IntFlag{Name: "batch", Usage: "queries scored together, at least 1, at most the number of queries (default: 16 on the CPU, where the entity table stays in cache, and 512 on CUDA, where each call to the device costs a round trip)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "ranks artifact `FILE` (- for an IPC stream on stdout)"},
			&cli.StringFlag{Name: "shard", Usage: "rank only shard `i/n` of the queries (0 <= i < n; whole batches; rows keep the queries' ids); metrics takes the n shards as one run"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			var sh shard.Spec
			if c.IsSet("shard") {
				s, err := shard.Parse(c.String("shard"))
				if err != nil {
					return err
				}
				sh = s
			}
			kernels, dev, err := device.Open(c.String("device"), c.Int("workers"))
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
			return pipeline.Rank(pipeline.RankConfig{Checkpoint: c.String("checkpoint"), Queries: c.String("queries"),
				Cones: c.String("cones"), Output: c.String("output"), TopK: c.Int("top"), Data: c.String("data"),
				Kernels: kernels, Device: device.RankDevice(dev), Workers: c.Int("workers"), Batch: batch, Shard: sh, Log: log})
		},
	}
}
