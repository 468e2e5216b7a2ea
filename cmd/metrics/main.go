// Command metrics aggregates ranks artifacts (one per seed) into the papers' per-type MRR
// and Hits@k tables with error bars, and reports the relation patterns a model learned.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/report"
)

func main() {
	// SIGINT and SIGTERM end the run at once, removing unfinished outputs (package outfile).
	outfile.Main("metrics", func(ctx context.Context) error { return cliargs.Run(ctx, app(), os.Args) })
}

func app() *cli.App {
	return &cli.App{
		Name:      "metrics",
		Version:   cliargs.Version(),
		Usage:     "per-type MRR and Hits@1/3/10 over seeds (mean ± std, bootstrap 95% interval)",
		ArgsUsage: "RANKS... (the seeds' ranks files; the n files of a rank --shard run count as one seed)",
		UsageText: "metrics [options] RANKS... (the seeds' ranks files; the n files of a rank --shard run count as one seed)\n" +
			"metrics curves|results|patterns [command options] (metrics help COMMAND)",
		Description: "The RANKS files are the seeds of one model: distinct checkpoints of one model and training configuration\n" +
			"(seeds differ in --seed only), ranking the same queries file; anything else is refused, naming what differs.\n" +
			"With --models, the files are grouped by model and configuration and each model gets its own row.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "compare", Usage: "put the published RoConE and ConE rows beside ours"},
			&cli.BoolFlag{Name: "models", Usage: "several models side by side: group RANKS by model and training configuration, one row per model (its seeds averaged)"},
			&cli.StringFlag{Name: "plot", Usage: "MRR-per-type plot with error bars, `FILE`.png or .svg"},
			&cli.StringFlag{Name: "log", Usage: "a train-log artifact `FILE` whose loss and valid-MRR curves to plot"},
			&cli.StringFlag{Name: "curves", Usage: "where the training curves go, `FILE`.png or .svg", DefaultText: "next to --plot, -training added"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "metrics artifact `FILE` (- for stdout is not allowed: the table goes there)"},
			&cli.IntFlag{Name: "resamples", Value: 1000, Usage: "`N` bootstrap resamples over queries (at least 40); 0: no bootstrap (no intervals)"},
			&cli.Uint64Flag{Name: "seed", Usage: "bootstrap seed `N`"},
			&cli.StringFlag{Name: "label", Usage: "`NAME` of our row in the tables", DefaultText: "the model"},
		},
		Action: func(c *cli.Context) error {
			if err := cliargs.NotEmpty(c, c.App.Flags); err != nil {
				return err
			}
			if l := c.String("label"); c.IsSet("label") && (strings.TrimSpace(l) == "" || breaksCell(l)) {
				// The label is a cell of the tables: a newline or '|' would break them.
				return fmt.Errorf("--label %q: want a name for our row, not blank, without control characters or '|' (a Markdown table's column break)", l)
			}
			if c.String("output") == "-" {
				return fmt.Errorf("-o -: the table is written to stdout; give the metrics artifact a file name")
			}
			curves := c.String("curves")
			if c.IsSet("log") && curves == "" {
				plot := c.String("plot")
				if plot == "" {
					return fmt.Errorf("--log needs --curves FILE (or --plot, to put the curves beside it)")
				}
				ext := filepath.Ext(plot)
				curves = strings.TrimSuffix(plot, ext) + "-training" + ext
			}
			return pipeline.Metrics(pipeline.MetricsConfig{
				Ranks: c.Args().Slice(), Models: c.Bool("models"), Output: c.String("output"), Compare: c.Bool("compare"), Plot: c.String("plot"),
				TrainLog: c.String("log"), CurvePlot: curves, Resamples: c.Int("resamples"), Seed: c.Uint64("seed"), Label: c.String("label"),
			}, outfile.Stdout)
		},
		Commands: []*cli.Command{
			{
				Name:      "curves",
				Usage:     "a run's training curves from its train logs alone (also while it runs): the loss in windows, the valid MRR at each validation",
				ArgsUsage: "LOG... (train-log artifacts)",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "points", Value: 20, Usage: "average the loss over `N` windows of steps in the printed table (the CSV has every step)"},
					&cli.StringFlag{Name: "csv", Usage: "every row of every log as CSV, `FILE`"},
					&cli.StringFlag{Name: "plot", Usage: "the loss and valid-MRR curves of the one LOG, `FILE`.png or .svg"},
				},
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
						return err
					}
					return pipeline.Curves(pipeline.CurvesConfig{Logs: c.Args().Slice(), Points: c.Int("points"), CSV: c.String("csv"),
						Plot: c.String("plot")}, outfile.Stdout)
				},
			},
			{
				Name:      "results",
				Usage:     "the reproduction tables from the results entries kept in the repository (nothing is re-run)",
				ArgsUsage: "DIR... (results folders, searched for entries: folders with run.json, metrics.arrow, train-log.arrow)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "readme", Usage: "replace the generated block of `FILE` (between its results markers) instead of printing"},
				},
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
						return err
					}
					for _, a := range c.Args().Slice() {
						if strings.HasPrefix(a, "-") {
							return fmt.Errorf("%s: flags go before the folders (metrics results [--readme FILE] DIR...)", a)
						}
					}
					return pipeline.Results(pipeline.ResultsConfig{Dirs: c.Args().Slice(), Readme: c.String("readme")}, outfile.Stdout)
				},
			},
			{
				Name:  "patterns",
				Usage: "how symmetric, inverse and compositional each relation's learned rotation is",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "checkpoint", Required: true, Usage: "a trained model `FILE`"},
					&cli.IntFlag{Name: "top", Value: 10, Usage: "list the `N` strongest of each pattern (N ≥ 1)"},
					&cli.StringFlag{Name: "data", Usage: "dataset `DIR`, for relation names"},
				},
				Action: func(c *cli.Context) error {
					if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
						return err
					}
					return pipeline.Patterns(pipeline.PatternsConfig{Checkpoint: c.String("checkpoint"), Top: c.Int("top"), Data: c.String("data"), Log: os.Stderr}, outfile.Stdout)
				},
			},
		},
	}
}

// breaksCell reports whether a --label would break the tables' row it names.
func breaksCell(label string) bool {
	_, bad := report.CellBreak(label, false)
	return bad
}
