package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
	"github.com/rocone/rocone/pkg/train"
)

// TestTimings: the timings of a checkpoint and its own log; another run's log (another
// seed, another KG) or a log that goes on past the checkpoint is refused, naming both.
func TestTimings(t *testing.T) {
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	line, err := timings(l.Model1, l.Log(l.Model1))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Split(line, "\t"); len(f) != 7 || f[0] != "6" {
		t.Errorf("line %q: want 7 fields, the first 6 updates (2 steps)", line)
	}
	// Model1 resumed to 4 steps, with its log: the log then holds 4 steps' timings.
	longer, longerLog := filepath.Join(dir, "m1-4.arrow"), filepath.Join(dir, "m1-4.log.arrow")
	for src, dst := range map[string]string{l.Model1: longer, l.Log(l.Model1): longerLog} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := train.ReadCheckpointConfig(l.Model1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Steps = 4
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: l.Train, Checkpoint: longer, Log: longerLog, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := timings(longer, longerLog); err != nil {
		t.Errorf("the resumed run and its log: %v", err)
	}
	for _, c := range []struct {
		name, ck, log, want string
	}{
		{"another seed's log", l.Model1, l.Log(l.Model2), l.Log(l.Model2) + " is not the log of " + l.Model1 + ": its first 2 steps are not the checkpoint's"},
		{"another KG's log", l.Model1, l.Log(l.ModelOnOther), l.Log(l.ModelOnOther) + " is not the log of " + l.Model1 + ": a rocone run on tiny (KG "},
		{"a log past the checkpoint", l.Model1, longerLog, longerLog + " goes on past " + l.Model1 + " (a train row of step 2, the checkpoint holds 2 steps)"},
		{"a log short of the checkpoint", longer, l.Log(l.Model1), l.Log(l.Model1) + " is not the log of " + longer + ": it has train rows of 2 of the 4 steps"},
	} {
		if _, err := timings(c.ck, c.log); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}
