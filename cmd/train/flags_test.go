package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestFlagValuesEndToEnd: configuration values outside their meaning, a train file as
// --valid, replacing another run's checkpoint or log, and resuming into another run's log
// are refused at once by the binary (exit 1, one "train: " prefix, a message saying what
// and how to proceed), and no file changes.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	tr, va := data(t)
	bin := stagetest.Build(t)
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "m.arrow"), filepath.Join(dir, "m-log.arrow")
	base := append([]string{"--train", tr, "--steps", "2", "--eval-every", "0"}, tiny...)
	if code, stderr := stagetest.Run(t, bin, append(slices.Clone(base), "--checkpoint", ck)...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	otherLog := filepath.Join(dir, "o-log.arrow")
	other := slices.Clone(base)
	other[slices.Index(other, "--dim")+1] = "16"
	if code, stderr := stagetest.Run(t, bin, append(other, "--checkpoint", filepath.Join(dir, "o.arrow"), "--log", otherLog)...); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	fresh := filepath.Join(dir, "fresh.arrow")
	emptyDevice := filepath.Join(t.TempDir(), "empty-device.yaml")
	if err := os.WriteFile(emptyDevice, []byte("device: \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"negative lambda", []string{"--lambda", "-0.5", "--checkpoint", fresh}, []string{"lambda", "≥ 0", "-0.5"}},
		{"dropout 1", []string{"--dropout", "1", "--checkpoint", fresh}, []string{"dropout must be in [0, 1)"}},
		{"zero lr", []string{"--lr", "0", "--checkpoint", fresh}, []string{"lr must be"}},
		{"negative gamma", []string{"--gamma", "-1", "--checkpoint", fresh}, []string{"gamma"}},
		{"zero dim", []string{"--dim", "0", "--checkpoint", fresh}, []string{"dim must be positive"}},
		{"negative steps", []string{"--steps", "-3", "--checkpoint", fresh}, []string{"steps must be positive"}},
		{"cone-hidden on rocone", []string{"--cone-hidden", "32", "--checkpoint", fresh}, []string{"--model cone only"}},
		{"negative workers", []string{"--workers", "-2", "--checkpoint", fresh}, []string{"--workers -2"}},
		{"workers 0", []string{"--workers", "0", "--checkpoint", fresh}, []string{"--workers 0: want a number of at least 1 (leave --workers out for every core)"}},
		{"train file as valid", []string{"--valid", tr, "--checkpoint", fresh}, []string{"--valid needs held-out queries"}},
		{"another run's checkpoint", []string{"--dim", "32", "--checkpoint", ck}, []string{"holds the checkpoint of another run (dim 8 vs 32)", "--overwrite"}},
		{"unknown matmul", []string{"--matmul", "fp16", "--checkpoint", fresh}, []string{"--matmul", `matmul "fp16": want fp32 or tf32`}},
		{"resume with another matmul", []string{"--checkpoint", ck, "--resume", "--steps", "3", "--matmul", "tf32"},
			[]string{"--matmul conflicts with the checkpoint: it sets matmul tf32, the checkpoint was trained with matmul fp32"}},
		{"another run's checkpoint: matmul", []string{"--matmul", "tf32", "--checkpoint", ck}, []string{"holds the checkpoint of another run (matmul fp32 vs tf32)", "--overwrite"}},
		{"resume and overwrite", []string{"--checkpoint", ck, "--resume", "--overwrite"}, []string{"give one of them"}},
		{"resume into another run's log", []string{"--checkpoint", ck, "--resume", "--steps", "3", "--log", otherLog}, []string{"is the log of another run (dim 16 vs 8)"}},
		// An empty value would pass for the flag's default: refused (only --log "" means
		// something, no log).
		{"empty device", []string{"--device", "", "--checkpoint", fresh}, []string{`--device "": an empty value; give a DEVICE, or leave --device out (default: cpu)`}},
		{"empty matmul", []string{"--matmul", "", "--checkpoint", fresh}, []string{`--matmul "": an empty value`, "(default: fp32)"}},
		{"empty preset", []string{"--preset", "", "--checkpoint", fresh}, []string{`--preset "": an empty value; give a NAME, or leave --preset out`}},
		{"empty profile", []string{"--profile", "", "--checkpoint", fresh}, []string{`--profile "": an empty value; give a FILE`}},
		{"empty best", []string{"--best", "", "--checkpoint", fresh}, []string{`--best "": an empty value; give a FILE`}},
		{"empty partial", []string{"--partial", "", "--checkpoint", fresh}, []string{`--partial "": an empty value; give a FILE`}},
		{"empty best-metric", []string{"--best-metric", "", "--checkpoint", fresh}, []string{`--best-metric "": an empty value`, "(default: mrr:epfo)"}},
		{"empty valid", []string{"--valid", "", "--checkpoint", fresh}, []string{`--valid "": an empty value; give a FILE, or leave --valid out`}},
		{"empty config", []string{"--config", "", "--checkpoint", fresh}, []string{`--config "": an empty value; give a FILE`}},
		{"empty profile-steps", []string{"--profile-steps", "", "--checkpoint", fresh}, []string{`--profile-steps "": an empty value`, "(default: 5-14)"}},
		{"empty value in the config file", []string{"--config", emptyDevice, "--checkpoint", fresh}, []string{"--config " + emptyDevice + ": device: an empty value; give one, or leave the key out"}},
		{"empty train", []string{"--train", "", "--checkpoint", fresh}, []string{`--train "": an empty value; give a FILE`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, inputs := stagetest.SnapshotDir(t, dir), stagetest.SnapshotDir(t, filepath.Dir(tr))
			args := withFlags(base, tc.args...)
			code, stderr := stagetest.Run(t, bin, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if !strings.HasPrefix(stderr, "train: ") || strings.Contains(stderr, "train: train:") {
				t.Errorf("stderr %q: want one \"train: \" prefix", stderr)
			}
			stagetest.SameDir(t, "run folder", before, stagetest.SnapshotDir(t, dir))
			stagetest.SameDir(t, "inputs", inputs, stagetest.SnapshotDir(t, filepath.Dir(tr)))
		})
	}
	// Allowed: the same configuration again, and another one with --overwrite.
	if code, stderr := stagetest.Run(t, bin, append(slices.Clone(base), "--checkpoint", ck)...); code != 0 {
		t.Fatalf("same configuration again: exit %d: %s", code, stderr)
	}
	if code, stderr := stagetest.Run(t, bin, withFlags(base, "--valid", va, "--dim", "32", "--checkpoint", ck, "--overwrite")...); code != 0 {
		t.Fatalf("--overwrite: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatal(err)
	}
}

// withFlags returns base with each flag of args set: a flag base already gives gets the
// new value in its place (a flag given twice is an error), others are appended. --resume
// and --overwrite take no value.
func withFlags(base []string, args ...string) []string {
	out := slices.Clone(base)
	for i := 0; i < len(args); i++ {
		flag := args[i]
		if flag == "--resume" || flag == "--overwrite" {
			out = append(out, flag)
			continue
		}
		if j := slices.Index(out, flag); j >= 0 {
			out[j+1] = args[i+1]
		} else {
			out = append(out, flag, args[i+1])
		}
		i++
	}
	return out
}
