// Command embed writes the cones of a queries artifact under a trained model: one row per
// query and DNF branch (see the README for the cones schema).
package main

import (
	"context"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/compute/device"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/pipeline"
)

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
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			kernels, err := device.Backend(c.String("device"), 0)
			if err != nil {
				return err
			}
			var log io.Writer = os.Stderr
			if c.Bool("quiet") {
				log = nil
			}
			return pipeline.Embed(pipeline.EmbedConfig{Checkpoint: c.String("checkpoint"), Queries: c.String("queries"),
				Output: c.String("output"), Kernels: kernels, Log: log})
		},
	}
}
