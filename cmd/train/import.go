package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/qecone"
)

// importCommand is `train import-qecone`: a QE-ConE (ConE's PyTorch code) checkpoint into
// this project's checkpoint artifact (package qecone), for embed, rank and metrics.
func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import-qecone",
		Usage:     "convert a QE-ConE (ConE, PyTorch) checkpoint into a cone checkpoint artifact",
		UsageText: "train import-qecone --from PATH [--data DIR] [--config FILE] [--lambda λ] [--dataset NAME] [--overwrite] -o FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "QE-ConE's checkpoint `PATH`: the torch.save file main.py writes (named checkpoint) or its folder", DefaultText: cliargs.Required},
			&cli.StringFlag{Name: "config", Usage: "QE-ConE's config.json `FILE`: λ (center_reg), dropout, the run's arguments", DefaultText: "the one beside the checkpoint, if any"},
			&cli.Float64Flag{Name: "lambda", Usage: "`λ`, ConE's center_reg (the checkpoint does not hold it); needed without config.json", DefaultText: "config.json's center_reg"},
			&cli.StringFlag{Name: "data", Usage: "the dataset `DIR` of the KG the model was trained on (as sample's --data): its sizes are checked and its digest recorded, so that rank, embed and metrics check queries against it", DefaultText: "none: no KG digest recorded, and those stages warn"},
			&cli.StringFlag{Name: "dataset", Usage: "dataset `NAME` in the artifact; must match the queries rank is given", DefaultText: "--data's folder name, else config.json's data_path's last element"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "checkpoint artifact `FILE` to write", DefaultText: cliargs.Required},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing file at -o that is not an earlier import of the same QE-ConE checkpoint; without it that is an error"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q", c.Args().First())
			}
			// An empty value would pass for the flag's default (--dataset "" for the
			// folder's name, --data "" for no KG digest) or fail as an unnamed path.
			if err := cliargs.NotEmpty(c, c.Command.Flags); err != nil {
				return err
			}
			from, out := c.String("from"), c.String("output")
			switch {
			case from == "":
				return fmt.Errorf("--from is required")
			case out == "":
				return fmt.Errorf("-o is required")
			}
			inputs := []outfile.Path{{Flag: "--from", Path: from}, {Flag: "--config", Path: c.String("config")}}
			if dir := c.String("data"); dir != "" {
				inputs = append(inputs, outfile.DirFiles("--data", dir)...)
			}
			if st, err := os.Stat(from); err == nil && st.IsDir() {
				// Every file of the run folder is an input: the checkpoint, and the
				// config.json read when --config is not given.
				inputs = append(inputs, outfile.DirFiles("--from", from)...)
			} else if c.String("config") == "" {
				// --from names the checkpoint file: the config.json beside it is read
				// (qecone.Import), an implicit input, protected as well.
				inputs = append(inputs, outfile.Path{Flag: "--from", Path: filepath.Join(filepath.Dir(from), "config.json")})
			}
			release, err := outfile.Claim(inputs, []outfile.Path{{Flag: "-o", Path: out}})
			if err != nil {
				return err
			}
			defer release()
			if !c.Bool("overwrite") {
				if err := checkImportOverwrite(out, from); err != nil {
					return err
				}
			}
			opts := qecone.ImportOptions{Checkpoint: from, Config: c.String("config"), Dataset: c.String("dataset")}
			if dir := c.String("data"); dir != "" {
				if opts.KG, err = kg.Load(dir, kg.FormatAuto); err != nil {
					return err
				}
			}
			if c.IsSet("lambda") {
				l := c.Float64("lambda")
				opts.Lambda = &l
			}
			ck, err := qecone.Import(opts)
			if err != nil {
				return err
			}
			return artifact.WriteCheckpoint(out, ck)
		},
	}
}

// checkImportOverwrite refuses an existing regular file at -o unless it is a checkpoint
// artifact imported from the same QE-ConE checkpoint (its recorded source is the same
// file), as train refuses to replace another run's checkpoint without --overwrite.
func checkImportOverwrite(out, from string) error {
	fi, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	meta, err := artifact.ReadCheckpointMeta(out)
	if err != nil {
		return fmt.Errorf("-o %s exists and is not a checkpoint this import may replace (%v); give --overwrite to replace it, or choose another path", out, err)
	}
	var state struct {
		ImportedFrom string `json:"imported_from"`
		Source       string `json:"source"`
	}
	_ = json.Unmarshal([]byte(meta.State), &state)
	src := from
	if st, err := os.Stat(from); err == nil && st.IsDir() {
		src = filepath.Join(from, "checkpoint")
	}
	if state.ImportedFrom != "QE-ConE" {
		return fmt.Errorf("-o %s holds a checkpoint that is not a QE-ConE import; give --overwrite to replace it, or choose another path", out)
	}
	was, err1 := os.Stat(state.Source)
	now, err2 := os.Stat(src)
	if err1 != nil || err2 != nil || !os.SameFile(was, now) {
		return fmt.Errorf("-o %s holds the import of another QE-ConE checkpoint (%s); give --overwrite to replace it, or choose another path", out, state.Source)
	}
	return nil
}
