package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/synth"
)

// synthCommand is `sample synth`: a synthetic KG with a power-law degree distribution in
// the dataset layout (package synth), for scaling measurements (make bench-scale).
func synthCommand() *cli.Command {
	return &cli.Command{
		Name:  "synth",
		Usage: "write a synthetic KG (power-law degrees, BetaE ids, train/valid/test) for scaling measurements",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "entities", Required: true, Usage: "number of entities `N`"},
			&cli.IntFlag{Name: "relations", Required: true, Usage: "number of relations `R` (ids 0..2R-1: 2k and its inverse 2k+1)"},
			&cli.IntFlag{Name: "edges", Required: true, Usage: "number of facts `M` over the three splits, each listed in both directions (2M rows)"},
			&cli.Uint64Flag{Name: "seed", Usage: "random seed `N`; the same flags give byte-identical files"},
			&cli.Float64Flag{Name: "skew", Value: synth.DefaultSkew, Usage: "power-law exponent `S` in (0, 1) of entity and relation popularity (P(rank k) ∝ k^-S)"},
			&cli.Float64Flag{Name: "valid", Value: synth.DefaultValidFrac, Usage: "share `X` of the facts held out for valid"},
			&cli.Float64Flag{Name: "test", Value: synth.DefaultTestFrac, Usage: "share `X` of the facts held out for test"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "dataset `DIR` to write (created; existing dataset files in it are refused)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no summary on stderr"},
		},
		Action: func(c *cli.Context) error {
			if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
				return err
			}
			if c.NArg() > 0 {
				return fmt.Errorf("synth: unexpected argument %q", c.Args().First())
			}
			if c.Float64("skew") == 0 { // synth.Options' zero value is its default: a given 0 is not
				return fmt.Errorf("synth: --skew 0: want a number in (0, 1)")
			}
			if err := synth.CheckOutput(c.String("output")); err != nil { // before the graph is drawn
				return err
			}
			start := time.Now()
			g, err := synth.Generate(synth.Options{
				Entities: c.Int("entities"), Relations: c.Int("relations"), Edges: c.Int("edges"), Seed: c.Uint64("seed"),
				Skew: c.Float64("skew"), ValidFrac: c.Float64("valid"), TestFrac: c.Float64("test"),
			})
			if err != nil {
				return err
			}
			if err := g.Write(c.String("output")); err != nil {
				return err
			}
			if !c.Bool("quiet") {
				fmt.Fprintf(os.Stderr, "synth: %s: %d entities, %d relation ids, %d/%d/%d train/valid/test rows in %.1fs\n", c.String("output"),
					g.Entities, 2*g.Relations, 2*len(g.Train), 2*len(g.Valid), 2*len(g.Test), time.Since(start).Seconds())
			}
			return nil
		},
	}
}
