// Command embed writes the cones of a queries artifact under a trained model: one row per
// query and DNF branch (see the README for the cones schema). `embed export` writes a
// model's tables and a cones artifact as .npy or Parquet files for Python and SQL.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/cliargs"
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

// required refuses a command line without the flags names: they are not marked Required,
// which urfave/cli would demand before the export subcommand too; their help says
// "(required)" through DefaultText cliargs.Required.
func required(c *cli.Context, names ...string) error {
	var missing []string
	for _, n := range names {
		if !c.IsSet(n) {
			missing = append(missing, n)
		}
	}
	return cliargs.MissingFlags(missing)
}

func main() {
	// SIGINT and SIGTERM end the run at once, removing unfinished outputs (package outfile).
	outfile.Main("embed", func(ctx context.Context) error { return cliargs.Run(ctx, app(), os.Args) })
}

func app() *cli.App {
	return &cli.App{
		Name:    "embed",
		Version: cliargs.Version(),
		Usage:   "embed queries as cones (axis and half aperture per DNF branch)",
		UsageText: "embed --checkpoint FILE --queries FILE|- -o FILE|- [options]\n" +
			"embed export [--checkpoint FILE] [--cones FILE|-] --format npy|parquet -o DIR [options]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checkpoint", Usage: "trained model `FILE`", DefaultText: cliargs.Required},
			&cli.StringFlag{Name: "queries", Usage: "queries artifact `FILE` (- for stdin)", DefaultText: cliargs.Required},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "cones artifact `FILE` (- for an IPC stream on stdout)", DefaultText: cliargs.Required},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "`DEVICE`: cpu or cuda (cuda: the queries embedded on the GPU, in rank's CUDA batches of 512, and their cones downloaded)"},
			&cli.StringFlag{Name: "shard", Usage: "embed only shard `i/n` of the queries (0 <= i < n; whole batches, cut as rank --shard cuts on the same --device); the n shards' cones are the unsharded cones"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Commands: []*cli.Command{exportCommand()},
		Action: func(c *cli.Context) error {
			if err := required(c, "checkpoint", "queries", "output"); err != nil {
				return err
			}
			// An empty value would pass for the flag's default (--device '' for cpu) or
			// fail as an unnamed path.
			if err := cliargs.NotEmpty(c, c.App.Flags); err != nil {
				return err
			}
			sh, err := shardFlag(c)
			if err != nil {
				return err
			}
			dev, err := device.Open(c.String("device"), 0)
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
				Output: c.String("output"), Kernels: dev.Kernels, Device: dev.Rank, Shard: sh, ShardBlock: block, Log: log, Warnings: os.Stderr})
		},
	}
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write a model's entity and relation tables (angles in radians and raw values) and/or a cones artifact as .npy or Parquet files",
		Description: "The output folder gets one file per array (npy: entity_axis.npy ...) or per table (parquet: entities.parquet ...),\n" +
			"entities.tsv and relations.tsv (id, name) with --data, and manifest.json describing every file. It appears whole or not at all.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checkpoint", Usage: "trained model `FILE` to export", DefaultText: cliargs.RequiredWhen("unless --cones")},
			&cli.StringFlag{Name: "cones", Usage: "cones artifact `FILE` to export (- for stdin)", DefaultText: cliargs.RequiredWhen("unless --checkpoint")},
			&cli.StringFlag{Name: "data", Usage: "dataset `DIR` the checkpoint was trained on, for entity and relation names"},
			&cli.StringFlag{Name: "format", Required: true, Usage: "`FORMAT`: npy or parquet"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output `DIR` (new or empty)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace a non-empty output folder as a whole (never one holding an input)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q", c.Args().First())
			}
			// An empty value would pass for leaving the flag out (--cones '', --data '');
			// Export's own check of --format names the formats.
			if err := cliargs.NotEmpty(c, c.Command.Flags, "format"); err != nil {
				return err
			}
			var log io.Writer = os.Stderr
			if c.Bool("quiet") {
				log = nil
			}
			return pipeline.Export(pipeline.ExportConfig{Checkpoint: c.String("checkpoint"), Cones: c.String("cones"), Data: c.String("data"),
				Format: c.String("format"), Output: c.String("output"), Overwrite: c.Bool("overwrite"), Log: log, Warnings: os.Stderr})
		},
	}
}
