package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/train"
)

// TestAdamFlag: --adam sparse (or --sparse-adam, or adam: sparse in a config file) is
// stored in the checkpoint's configuration; a resume keeps it without the flag and refuses
// --adam dense; bad or contradictory values are errors naming the flags.
func TestAdamFlag(t *testing.T) {
	tr, _ := data(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfgFile, []byte("adam: sparse\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{{"adam", []string{"--adam", "sparse"}}, {"sparse-adam", []string{"--sparse-adam"}}, {"config", []string{"--config", cfgFile}}} {
		ck := filepath.Join(dir, c.name+".arrow")
		args := append([]string{"--train", tr, "--checkpoint", ck, "--log", "", "--steps", "2"}, tiny...)
		if err := runApp(append(args, c.args...)...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		saved, _, err := train.ReadCheckpointConfig(ck)
		if err != nil {
			t.Fatal(err)
		}
		if !saved.SparseAdam {
			t.Fatalf("%s: the checkpoint's configuration is dense: %s", c.name, saved.JSON())
		}
		if c.name != "adam" {
			continue
		}
		if err := runApp(append(args[:len(args):len(args)], "--resume", "--steps", "3")...); err != nil {
			t.Fatalf("resume: %v", err)
		}
		if saved, _, _ = train.ReadCheckpointConfig(ck); !saved.SparseAdam {
			t.Fatal("the resumed run lost sparse Adam")
		}
		err = runApp(append(args[:len(args):len(args)], "--resume", "--steps", "4", "--adam", "dense")...)
		if err == nil || !strings.Contains(err.Error(), "--adam dense conflicts with the checkpoint") {
			t.Fatalf("resume with --adam dense: %v", err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--adam", "lazy"}, `--adam "lazy": want dense or sparse`},
		{[]string{"--adam", "dense", "--sparse-adam"}, "disagree"},
	} {
		args := append([]string{"--train", tr, "--checkpoint", filepath.Join(dir, "x.arrow"), "--log", ""}, tiny...)
		if err := runApp(append(args, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}
