package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/internal/stagetest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/export"
)

// readManifest reads an export's manifest.json.
func readManifest(t *testing.T, dir string) export.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m export.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExport: embed export writes a checkpoint's tables with the KG's names (npy) and a
// checkpoint with its cones (parquet), every file the manifest lists and nothing else;
// --overwrite replaces an earlier export as a whole.
func TestExport(t *testing.T) {
	f := outfiletest.Make(t)
	cones := filepath.Join(t.TempDir(), "cones.arrow")
	outfiletest.Run(t, time.Minute, "--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", cones).Expect(t, 0)
	_, rows, err := artifact.ReadCones(cones)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export")

	before := outfiletest.Take(t, f.Dir, f.Data, cones)
	outfiletest.Run(t, time.Minute, "export", "--checkpoint", f.Checkpoint, "--data", f.Data, "--format", "npy", "-o", out).
		Expect(t, 0, "export: wrote "+out+" (npy)")
	before.Unchanged(t)
	man := readManifest(t, out)
	if man.Format != export.NPY || man.Names != f.Data || man.Checkpoint == nil || man.Checkpoint.Path != f.Checkpoint || man.Cones != nil {
		t.Errorf("manifest %+v", man)
	}
	var listed []string
	for _, fi := range man.Files {
		listed = append(listed, fi.File)
	}
	var found []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "manifest.json" {
			rel, _ := filepath.Rel(out, p)
			found = append(found, rel)
		}
		return nil
	})
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Errorf("files %v, the manifest lists %v", found, listed)
	}
	// The names are the KG's, line for line.
	for _, name := range []string{"entities.tsv", "relations.tsv"} {
		got, _ := os.ReadFile(filepath.Join(out, name))
		want, _ := os.ReadFile(filepath.Join(f.Data, name))
		if len(want) == 0 || strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
			t.Errorf("%s:\n%.300s\nthe KG's:\n%.300s", name, got, want)
		}
	}

	// Again over it, Parquet with the cones: refused without --overwrite, whole with it.
	args := []string{"export", "--checkpoint", f.Checkpoint, "--cones", cones, "--format", "parquet", "-q", "-o", out}
	kept := outfiletest.Take(t, out)
	outfiletest.Run(t, time.Minute, args...).Expect(t, 1, "embed: -o "+out+": the folder exists and is not empty (--overwrite replaces it as a whole)")
	kept.Unchanged(t)
	outfiletest.Run(t, time.Minute, append(args, "--overwrite")...).Expect(t, 0)
	man = readManifest(t, out)
	if man.Format != export.Parquet || man.Cones == nil || man.Cones.Rows != len(rows) || man.Names != "" {
		t.Errorf("manifest %+v", man)
	}
	es, _ := os.ReadDir(out)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if want := []string{"cones.parquet", "entities.parquet", "manifest.json", "params.parquet", "relations.parquet"}; !slices.Equal(names, want) {
		t.Errorf("after --overwrite: %v, want %v", names, want)
	}
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 1 {
		t.Errorf("beside the output: %d entries (a temporary folder left?)", len(es))
	}
}

// TestExportRefuses: bad input gets exit status 1 and a message naming the flag or file
// and what is wrong, before anything is written: no output folder, no input changed.
func TestExportRefuses(t *testing.T) {
	f := outfiletest.Make(t)
	tmp := t.TempDir()
	cones := filepath.Join(tmp, "cones.arrow")
	outfiletest.Run(t, time.Minute, "--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", cones).Expect(t, 0)
	truncate := func(src, name string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, name)
		os.WriteFile(p, b[:len(b)/2], 0o644)
		return p
	}
	halfCk, halfCones := truncate(f.Checkpoint, "half-model.arrow"), truncate(cones, "half-cones.arrow")
	nan := filepath.Join(tmp, "nan.arrow")
	stagetest.WithNaN(t, f.Checkpoint, nan)
	other := filepath.Join(tmp, "other.arrow") // another checkpoint: one parameter changed
	ck, err := artifact.ReadCheckpoint(f.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	ck.Tensors[0].Values[0] += 0.25
	if err := artifact.WriteCheckpoint(other, ck); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(tmp, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine"), 0o644)
	out := filepath.Join(tmp, "out")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a queries file as --checkpoint", []string{"--checkpoint", f.Test}, f.Test + ": "},
		{"a checkpoint as --cones", []string{"--cones", f.Checkpoint}, f.Checkpoint + ": "},
		{"a truncated checkpoint", []string{"--checkpoint", halfCk}, halfCk + ": "},
		{"truncated cones", []string{"--cones", halfCones}, halfCones + ": "},
		{"a NaN parameter", []string{"--checkpoint", nan}, nan + ": parameter entity[0, 1] is NaN"},
		{"cones of another checkpoint", []string{"--checkpoint", other, "--cones", cones}, cones + ": cones of checkpoint " + f.Checkpoint},
		{"a missing checkpoint", []string{"--checkpoint", filepath.Join(tmp, "none.arrow")}, "open " + filepath.Join(tmp, "none.arrow") + ": no such file or directory"},
		{"nothing to export", nil, "nothing to export: give --checkpoint, --cones or both"},
		{"--data without --checkpoint", []string{"--cones", cones, "--data", f.Data}, "--data " + f.Data + " names the entities and relations of --checkpoint; it needs --checkpoint"},
		{"an unknown format", []string{"--checkpoint", f.Checkpoint, "--format", "csv"}, `--format: unknown export format "csv" (known: npy, parquet)`},
		{"no --format", []string{"--checkpoint", f.Checkpoint, "--format", ""}, `--format: unknown export format ""`},
		{"-o over the inputs' folder", []string{"--checkpoint", f.Checkpoint, "-o", f.Dir, "--overwrite"}, "-o " + f.Dir + " holds --checkpoint " + f.Checkpoint + ": an input is never written over"},
		{"-o is the data folder", []string{"--checkpoint", f.Checkpoint, "--data", f.Data, "-o", f.Data, "--overwrite"}, "-o " + f.Data + " holds --data " + f.Data},
		{"-o is a file", []string{"--checkpoint", f.Checkpoint, "-o", cones}, "-o " + cones + ": exists and is not a folder"},
		{"-o is a full folder", []string{"--checkpoint", f.Checkpoint, "-o", full}, "-o " + full + ": the folder exists and is not empty"},
		{"--overwrite of a folder that is no export", []string{"--checkpoint", f.Checkpoint, "-o", full, "--overwrite"}, "-o " + full + " holds files but no manifest.json: --overwrite replaces an earlier export only"},
		{"-o the working directory", []string{"--checkpoint", f.Checkpoint, "-o", ".", "--overwrite"}, "-o . holds the working directory"},
		{"-o above the working directory", []string{"--checkpoint", f.Checkpoint, "-o", "..", "--overwrite"}, "-o .. holds the working directory"},
		{"-o -", []string{"--checkpoint", f.Checkpoint, "-o", "-"}, "-o -: the output is a folder of files, not stdout"},
		{"a stray argument", []string{"--checkpoint", f.Checkpoint, "--format", "npy", "-o", out, "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"export", "-q"}, c.args...)
			if !slices.Contains(args, "--format") {
				args = append(args, "--format", "npy")
			}
			if !slices.Contains(args, "-o") {
				args = append(args, "-o", out)
			}
			before := outfiletest.Take(t, f.Dir, f.Data, tmp)
			r := outfiletest.Run(t, time.Minute, args...)
			r.Expect(t, 1, "embed: "+c.want)
			if strings.Contains(r.Stderr, "panic") {
				t.Errorf("panic:\n%s", r.Stderr)
			}
			before.Unchanged(t)
			if _, err := os.Stat(out); err == nil {
				t.Error("an output folder was left")
			}
		})
	}
}

// TestExportSIGTERM: a signal while the folder is in flight removes it and says so.
func TestExportSIGTERM(t *testing.T) {
	f := outfiletest.Make(t)
	out := filepath.Join(t.TempDir(), "export")
	run := outfiletest.Start(t, []string{"export", "--checkpoint", f.Checkpoint, "--format", "npy", "-q", "-o", out}, "ROCONE_TEST_HOLD_OUTPUTS=1")
	run.Stderr.WaitFor(t, "holding", time.Minute)
	run.Process.Signal(syscall.SIGTERM)
	run.Wait().Expect(t, 143, "embed: stopped by SIGTERM; not written: "+out)
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 0 {
		t.Errorf("left %s", es[0].Name())
	}
}

// TestExportOneRunPerFolder: while a run writes an export folder, a second run naming the
// same folder fails at once, naming the first run's process, and leaves the folder as it
// was; once the first has ended (here by a signal), the folder is free again.
func TestExportOneRunPerFolder(t *testing.T) {
	f := outfiletest.Make(t)
	out := filepath.Join(t.TempDir(), "export")
	args := []string{"export", "--checkpoint", f.Checkpoint, "--format", "npy", "-q", "--overwrite", "-o", out}
	first := outfiletest.Start(t, args, "ROCONE_TEST_HOLD_OUTPUTS=1")
	defer first.Process.Kill()
	first.Stderr.WaitFor(t, "holding", time.Minute)
	held := "embed: -o " + out + ": another run is writing it (process " + strconv.Itoa(first.Process.Pid) + " holds"
	outfiletest.Run(t, time.Minute, args...).Expect(t, 1, held)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run wrote the folder: %v", err)
	}
	first.Process.Signal(syscall.SIGTERM)
	first.Wait().Expect(t, 143)
	if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 0 {
		t.Errorf("left %s after the signal", es[0].Name())
	}
	outfiletest.Run(t, time.Minute, args...).Expect(t, 0)
	readManifest(t, out)
}
