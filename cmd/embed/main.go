// Command embed writes the cones of a queries artifact under a trained model: one row per
// query and DNF branch (see the README for the cones schema).
package main

import (
	"context"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/shard"
)

// shardFlag is --shard i/n (the whole when not given).
func shardFlag(c *cli.Context) (shard.Spec, error) {
	if !c.IsSet("shard") {
		return shard.Spec{}, nil
	}
	return shard.Parse(c.String("shard"))
}

func main() {
	// SIGINT and SIGTERM end the run at once, removing unfinished outputs (package outfile).
	outfile.Main("embed", func(ctx context.Context) error { return app().RunContext(ctx, os.Args) })
}

func app() *cli.App {
	return &cli.App{
		Name:  "embed",
		Usage: "embed queries as cones (axis and half aperture per DNF branch)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checkpoint", Required: true, Usage: "trained model `FILE`"},
			&cli.StringFlag{Name: "queries", Required: true, Usage: "queries artifact `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "cones artifact `FILE` (- for an IPC stream on stdout)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda"},
			&cli.StringFlag{Name: "shard", Usage: "embed only shard `i/n` of the queries (0 <= i < n; whole batches, cut as rank --shard cuts on the same --device); the n shards' cones are the unsharded cones"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			sh, err := shardFlag(c)
			if err != nil {
				return err
			}
			kernels, err := device.Backend(c.String("device"), 0)
			if err != nil {
				return err
			}
			block := 0 // rank's batch on this device: its default
			if c.String("device") == "cuda" {
				block = 512
			}
			var log io.Writer = os.Stderr
			if c.Bool("quiet") {
				log = nil
			}
			return pipeline.Embed(pipeline.EmbedConfig{Checkpoint: c.String("checkpoint"), Queries: c.String("queries"),
				Output: c.String("output"), Kernels: kernels, Shard: sh, ShardBlock: block, Log: log})
		},
	}
}
