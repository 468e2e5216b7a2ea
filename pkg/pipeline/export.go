package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/export"
	"github.com/rocone/rocone/pkg/outfile"
)

// ExportConfig is what `embed export` does.
type ExportConfig struct {
	Checkpoint string // a checkpoint to export (its tables and parameters); optional
	Cones      string // a cones artifact to export ("-" for stdin); optional
	Data       string // the dataset folder the checkpoint was trained on, for names; optional
	Format     string // npy or parquet
	Output     string // the output folder
	Overwrite  bool   // replace an existing non-empty output folder
	Log        io.Writer
	// Warnings is where warnings go whatever Log (a checkpoint without lineage, a
	// folder without names): -q drops progress, never warnings. Nil: Log.
	Warnings io.Writer
}

// Export writes a model's entity and relation tables and parameters, and/or a cones
// artifact, into a new folder in a format outside readers take (package export). The
// inputs are checked as the other stages check them: the checkpoint's parameters finite
// (checkFinite), the --data folder the checkpoint's KG (datasetFor), and cones given with
// a checkpoint computed with that very checkpoint (by its SHA-256). The folder appears
// whole or not at all (outfile.Dir), and one run at a time writes it (outfile.ClaimDir).
func Export(cfg ExportConfig) error {
	format, err := export.ParseFormat(cfg.Format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	switch {
	case cfg.Checkpoint == "" && cfg.Cones == "":
		return fmt.Errorf("nothing to export: give --checkpoint, --cones or both")
	case cfg.Data != "" && cfg.Checkpoint == "":
		return fmt.Errorf("--data %s names the entities and relations of --checkpoint; it needs --checkpoint", cfg.Data)
	}
	inputs := []outfile.Path{{Flag: "--checkpoint", Path: cfg.Checkpoint}, {Flag: "--cones", Path: cfg.Cones}, {Flag: "--data", Path: cfg.Data}}
	out := outfile.Path{Flag: "-o", Path: cfg.Output}
	release, err := outfile.ClaimDir(out, cfg.Overwrite, inputs)
	if err != nil {
		return err
	}
	defer release()
	if cfg.Overwrite {
		if err := earlierExport(cfg.Output); err != nil {
			return err
		}
	}

	man := export.Manifest{WrittenBy: "embed export", Names: cfg.Data}
	var tables []export.Table
	var params []export.Tensor
	if cfg.Checkpoint != "" {
		warn := warnTo(cfg.Warnings, cfg.Log)
		l, err := loadModel(cfg.Checkpoint, nil)
		if err != nil {
			return err
		}
		var entityNames, relationNames []string
		if cfg.Data != "" {
			d, err := datasetFor(cfg.Data, l, warn)
			if err != nil {
				return err
			}
			entityNames, relationNames = d.EntityNames, d.RelationNames
			if entityNames == nil || relationNames == nil {
				fmt.Fprintf(warn, "warning: %s has no entities.tsv or relations.tsv: the names it lacks are left empty\n", cfg.Data)
				if entityNames == nil && relationNames == nil {
					man.Names = ""
				}
			}
		}
		if tables, params, err = export.Model(l.model, entityNames, relationNames); err != nil {
			return fmt.Errorf("%s: %w", cfg.Checkpoint, err)
		}
		man.Checkpoint = export.NewCheckpointInfo(cfg.Checkpoint, l.hash, l.meta, l.model.Config)
	}
	if cfg.Cones != "" {
		name := displayPath(cfg.Cones)
		meta, rows, err := artifact.ReadCones(cfg.Cones)
		if err != nil {
			return err
		}
		if man.Checkpoint != nil && meta.CheckpointHash != man.Checkpoint.SHA256 {
			return fmt.Errorf("%s: cones of checkpoint %s (SHA-256 %.12s), not of --checkpoint %s (%.12s)",
				name, meta.Checkpoint, meta.CheckpointHash, cfg.Checkpoint, man.Checkpoint.SHA256)
		}
		tables = append(tables, export.Cones(meta, rows))
		man.Cones = export.NewConesInfo(name, meta, len(rows))
	}

	d, err := outfile.CreateDir(cfg.Output, cfg.Overwrite)
	if err != nil {
		return fmt.Errorf("-o %w", err)
	}
	defer d.Abort()
	if err := export.Write(d, format, man, tables, params); err != nil {
		return err
	}
	if err := d.Commit(); err != nil {
		return err
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "export: wrote %s (%s)\n", cfg.Output, format)
	}
	return nil
}

// earlierExport refuses an --overwrite of a folder that holds files but no export's
// manifest.json: --overwrite replaces an earlier export as a whole, never a folder of
// other files given by mistake (-o data --overwrite).
func earlierExport(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return nil // new, empty, or not a folder: CheckDir says
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		return fmt.Errorf("-o %s holds files but no manifest.json: --overwrite replaces an earlier export only (choose another folder, or empty it)", dir)
	}
	return nil
}
