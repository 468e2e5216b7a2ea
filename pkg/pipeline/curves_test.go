package pipeline

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/train"
)

// curvesLog trains a tiny model for 12 steps with validation every 4 and returns its log.
func curvesLog(t *testing.T, dir string) string {
	t.Helper()
	trainFile := traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	validFile := traintest.Generate(t, dir, "valid.arrow", "valid", nil, 2)
	cfg, err := train.NewConfig("", []train.Setting{{Key: "dim", Value: 8}, {Key: "steps", Value: 12}, {Key: "eval_every", Value: 4},
		{Key: "batch", Value: 16}, {Key: "negatives", Value: 4}, {Key: "lr", Value: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log.arrow")
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Valid: validFile,
		Checkpoint: filepath.Join(dir, "m.arrow"), Log: log, Kernels: cpu.New(cpu.Options{})}); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestCurves: the windows are the means of the logged losses, every validation is a row
// of the MRR table, and the CSV holds every row of the log with its values.
func TestCurves(t *testing.T) {
	dir := t.TempDir()
	log := curvesLog(t, dir)
	_, rows, err := artifact.ReadTrainLog(log)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	csvPath := filepath.Join(dir, "curves.csv")
	if err := Curves(CurvesConfig{Logs: []string{log}, Points: 3, CSV: csvPath}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	// 12 train steps in 3 windows of 4: each window's loss is the mean of its 4 rows.
	var train []artifact.TrainLogRow
	valid := map[int64]float64{}
	for _, r := range rows {
		switch {
		case r.Kind == artifact.LogTrain:
			train = append(train, r)
		case r.Type == "AVG-EPFO":
			valid[r.Step] = r.MRR
		}
	}
	if len(train) != 12 || len(valid) < 2 {
		t.Fatalf("%d train rows, %d validations", len(train), len(valid))
	}
	for k := range 3 {
		var sum float64
		for _, r := range train[4*k : 4*k+4] {
			sum += r.Loss
		}
		want := fmt.Sprintf("| %d–%d | %.4f |", train[4*k].Step, train[4*k+3].Step, sum/4)
		if !strings.Contains(text, want) {
			t.Errorf("no window row %q in:\n%s", want, text)
		}
	}
	for step, m := range valid {
		if want := fmt.Sprintf("| %d | %.2f |", step, 100*m); !strings.Contains(text, want) {
			t.Errorf("no validation row %q in:\n%s", want, text)
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rows)+1 || recs[0][3] != "step" || recs[0][7] != "loss" {
		t.Fatalf("%d CSV records for %d rows; header %v", len(recs), len(rows), recs[0])
	}
	for i, r := range rows {
		rec := recs[i+1]
		step, _ := strconv.ParseInt(rec[3], 10, 64)
		if step != r.Step || rec[4] != r.Kind || rec[5] != r.Type {
			t.Fatalf("row %d: %v, want step %d %s %s", i, rec, r.Step, r.Kind, r.Type)
		}
		for col, v := range map[int]float64{7: r.Loss, 10: r.MRR} {
			if math.IsNaN(v) {
				if rec[col] != "" {
					t.Errorf("row %d col %d: %q for NaN", i, col, rec[col])
				}
				continue
			}
			if got, err := strconv.ParseFloat(rec[col], 64); err != nil || got != v {
				t.Errorf("row %d col %d: %q, want %v", i, col, rec[col], v)
			}
		}
	}
	// --plot draws the one log's curves in the format its name asks for, and prints the
	// same tables.
	for _, name := range []string{"curves.svg", "curves.png"} {
		plot := filepath.Join(dir, name)
		var again bytes.Buffer
		if err := Curves(CurvesConfig{Logs: []string{log}, Points: 3, Plot: plot}, &again); err != nil {
			t.Fatal(err)
		}
		if again.String() != text {
			t.Errorf("--plot %s: the tables differ:\n%s\nwant\n%s", name, again.String(), text)
		}
		b, err := os.ReadFile(plot)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") && !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s is not an SVG image: %.60q", name, b)
		}
		if strings.HasSuffix(name, ".png") {
			if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 100 {
				t.Errorf("%s is not a PNG image of a plot: %v", name, err)
			}
		}
	}
}

func TestCurvesRefuses(t *testing.T) {
	dir := t.TempDir()
	log := curvesLog(t, dir)
	copied := filepath.Join(dir, "copy.arrow")
	if b, err := os.ReadFile(log); err != nil || os.WriteFile(copied, b, 0o644) != nil {
		t.Fatal("copying the log")
	}
	for _, c := range []struct {
		name string
		cfg  CurvesConfig
		want string
	}{
		{"no log", CurvesConfig{Points: 5}, "no train log given"},
		{"points 0", CurvesConfig{Logs: []string{log}}, "--points 0"},
		{"plot of two logs", CurvesConfig{Logs: []string{log, log}, Points: 5, Plot: filepath.Join(dir, "p.svg")}, "give one train log (2 given)"},
		{"csv over the log", CurvesConfig{Logs: []string{log}, Points: 5, CSV: log}, "--csv " + log + " is the same file as train log " + log},
		{"not a log", CurvesConfig{Logs: []string{filepath.Join(dir, "m.arrow")}, Points: 5}, `artifact is "checkpoint", want "train-log"`},
		{"one log twice", CurvesConfig{Logs: []string{log, log}, Points: 5}, log + " and " + log + " are the same file, given twice"},
		{"one log by two names", CurvesConfig{Logs: []string{log, dir + "/./log.arrow"}, Points: 5}, "are the same file, given twice"},
		{"a copy of the log", CurvesConfig{Logs: []string{log, copied}, Points: 5}, log + " and " + copied + " are logs of one run"},
	} {
		err := Curves(c.cfg, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestCurvesBest: for a run that keeps its best validation and stops early, the curves
// say which validation was the best and where the run stopped, as its log records.
func TestCurvesBest(t *testing.T) {
	dir := t.TempDir()
	trainFile := traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	validFile := traintest.Generate(t, dir, "valid.arrow", "valid", nil, 2)
	cfg, err := train.NewConfig("", []train.Setting{{Key: "dim", Value: 8}, {Key: "steps", Value: 40}, {Key: "eval_every", Value: 2},
		{Key: "batch", Value: 16}, {Key: "negatives", Value: 4}, {Key: "lr", Value: 0.01}, {Key: "keep_best", Value: true},
		{Key: "patience", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log.arrow")
	res, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Valid: validFile,
		Checkpoint: filepath.Join(dir, "m.arrow"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if res.EarlyStop == nil {
		t.Fatalf("the run did not stop early: %+v", res)
	}
	var out bytes.Buffer
	if err := Curves(CurvesConfig{Logs: []string{log}, Points: 2}, &out); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Best validation by mrr:epfo: %.2f (×100) after step %d, 1 validation(s) since. Stopped early after step %d: 1 validations without improvement.",
		100*res.Best.Value, res.Best.Step, res.EarlyStop.Step)
	if !strings.Contains(out.String(), want) {
		t.Fatalf("no %q in:\n%s", want, out.String())
	}
	// A log without them says nothing of the kind.
	out.Reset()
	if err := Curves(CurvesConfig{Logs: []string{curvesLog(t, t.TempDir())}, Points: 2}, &out); err != nil || strings.Contains(out.String(), "Best validation") {
		t.Fatalf("%v:\n%s", err, out.String())
	}
}
