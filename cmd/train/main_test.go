package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/internal/stagebuild"
	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/train"
)

var (
	once                 sync.Once
	dataDir              string
	trainFile, validFile string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dataDir != "" {
		os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

func data(t *testing.T) (string, string) {
	t.Helper()
	once.Do(func() {
		var err error
		if dataDir, err = os.MkdirTemp("", "cmd-train-test-"); err != nil {
			t.Fatal(err)
		}
		trainFile = traintest.Generate(t, dataDir, "train.arrow", "train", nil, 1)
		validFile = traintest.Generate(t, dataDir, "valid.arrow", "valid", nil, 2)
	})
	if trainFile == "" {
		t.Fatal("no test data")
	}
	return trainFile, validFile
}

// tiny are the flags of a run that takes milliseconds.
var tiny = []string{"--dim", "8", "--batch", "16", "--negatives", "4", "--gamma", "12", "--lr", "0.01",
	"--dropout", "0.2", "--seed", "5", "-q"}

func runApp(args ...string) error {
	return app().RunContext(context.Background(), append([]string{"train"}, args...))
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestTrainAndResume(t *testing.T) {
	tr, va := data(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "m.arrow")
	args := append([]string{"--train", tr, "--valid", va, "--checkpoint", ck, "--steps", "6", "--eval-every", "3"}, tiny...)
	if err := runApp(args...); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"m-log.arrow", "m.arrow"}) {
		t.Fatalf("wrote %v", got)
	}
	// Raise --steps; repeating the configuration's flags is fine.
	if err := runApp(append(args[:len(args):len(args)], "--resume", "--steps", "9", "--model", "rocone")...); err != nil {
		t.Fatal(err)
	}
	meta, err := artifact.ReadCheckpointMeta(ck)
	if err != nil || meta.Step != 9 {
		t.Fatalf("%v: step %d, want 9", err, meta.Step)
	}
	_, rows, err := artifact.ReadTrainLog(filepath.Join(dir, "m-log.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []int64
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			steps = append(steps, r.Step)
		}
	}
	if !slices.Equal(steps, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("log steps %v: not continued across the resume", steps)
	}
}

// TestConfigPrecedence: flags over the config file over the preset over the defaults.
func TestConfigPrecedence(t *testing.T) {
	tr, _ := data(t)
	for _, tc := range []struct{ name, text string }{
		{"c.yaml", "dim: 12\nlr: 0.02\ngamma: 9\nnegatives: 3\nbatch: 8\nsteps: 2\neval_every: 0\nquiet: true\n"},
		{"c.toml", "dim = 12\nlr = 0.02\ngamma = 9\nnegatives = 3\nbatch = 8\nsteps = 2\neval-every = 0\nquiet = true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, tc.name)
			os.WriteFile(conf, []byte(tc.text), 0o644)
			ck := filepath.Join(dir, "m.arrow")
			if err := runApp("--train", tr, "--checkpoint", ck, "--config", conf, "--preset", "nell995", "--dim", "10"); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := train.ReadCheckpointConfig(ck)
			if err != nil {
				t.Fatal(err)
			}
			// dim from the flag, lr/gamma/negatives/batch/steps from the file, lambda and
			// dropout from the preset, the seed from the defaults.
			want := train.Config{Model: "rocone", Dim: 10, Batch: 8, Negatives: 3, Gamma: 9, LR: 0.02, Lambda: 0.02,
				Dropout: 0.2, Steps: 2, EvalEvery: 0, CheckpointEvery: 1000, Dataset: "tiny", NumEntities: cfg.NumEntities, NumRelations: cfg.NumRelations}
			if cfg != want {
				t.Errorf("config\n%+v, want\n%+v", cfg, want)
			}
		})
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.yaml")
	os.WriteFile(conf, []byte("lamda: 0.1\n"), 0o644)
	err := runApp("--train", tr, "--checkpoint", filepath.Join(dir, "m.arrow"), "--config", conf)
	if err == nil || !strings.Contains(err.Error(), `unknown key "lamda"`) {
		t.Errorf("unknown key: %v", err)
	}
}

// writeQueriesVersion rewrites a queries file with another version in its metadata.
func writeQueriesVersion(t *testing.T, src, dst, version string) {
	t.Helper()
	r, err := artifact.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	keys, vals := slices.Clone(md.Keys()), slices.Clone(md.Values())
	for i, k := range keys {
		if k == "version" {
			vals[i] = version
		}
	}
	m := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(r.Schema().Fields(), &m)
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		rec := r.Record()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// rewriteQueries writes the rows of src under changed metadata.
func rewriteQueries(t *testing.T, src, dst string, edit func(*artifact.QueriesMeta, []artifact.Query)) {
	t.Helper()
	meta, rows, err := artifact.ReadQueries(src)
	if err != nil {
		t.Fatal(err)
	}
	edit(&meta, rows)
	if err := artifact.WriteQueries(dst, meta, rows); err != nil {
		t.Fatal(err)
	}
}

// TestBadInput: each bad input is a clear error, and nothing is written.
func TestBadInput(t *testing.T) {
	tr, va := data(t)
	in := t.TempDir()
	v2 := filepath.Join(in, "v2.arrow")
	writeQueriesVersion(t, tr, v2, "2")
	otherDataset := filepath.Join(in, "other.arrow")
	rewriteQueries(t, va, otherDataset, func(m *artifact.QueriesMeta, _ []artifact.Query) { m.Dataset = "FB15k-237" })
	bigger := filepath.Join(in, "bigger.arrow")
	rewriteQueries(t, va, bigger, func(m *artifact.QueriesMeta, rows []artifact.Query) {
		m.NumEntities = 500
		rows[0].Hard = append(rows[0].Hard, 400)
	})
	biggerTrain := filepath.Join(in, "bigger-train.arrow")
	rewriteQueries(t, tr, biggerTrain, func(m *artifact.QueriesMeta, rows []artifact.Query) {
		m.NumRelations = 50
		rows[0].Relations = []int32{40}
	})
	// A finished tiny checkpoint, for --resume cases and as a file of the wrong kind.
	ckDir := t.TempDir()
	ck := filepath.Join(ckDir, "m.arrow")
	if err := runApp(append([]string{"--train", tr, "--checkpoint", ck, "--steps", "2", "--log", ""}, tiny...)...); err != nil {
		t.Fatal(err)
	}
	ckBytes, _ := os.ReadFile(ck)
	config := func(name, text string) string {
		p := filepath.Join(in, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	cases := []struct {
		name   string
		args   []string
		want   string
		resume bool
	}{
		{"valid file as train", []string{"--train", va}, "split train", false},
		{"wrong artifact", []string{"--train", ck}, `artifact is "checkpoint", want "queries"`, false},
		{"wrong version", []string{"--train", v2}, "version 2 not supported", false},
		{"valid from another dataset", []string{"--train", tr, "--valid", otherDataset}, "dataset FB15k-237", false},
		{"valid ids beyond the KG", []string{"--train", tr, "--valid", bigger}, "500 entities", false},
		{"cuda", []string{"--train", tr, "--device", "cuda"}, "make build-cuda", false},
		{"unknown model", []string{"--train", tr, "--model", "transe"}, "unknown model variant", false},
		{"profile on the cpu", []string{"--train", tr, "--profile", "p.md"}, "needs --device cuda", false},
		{"profile steps alone", []string{"--train", tr, "--profile-steps", "1-2"}, "--profile-steps without --profile", false},
		{"profile steps bad", []string{"--train", tr, "--device", "cuda", "--profile", "p.md", "--profile-steps", "3"}, "want FROM-TO", false},
		{"missing train", []string{}, "--train is required", false},
		{"a quoted integer in TOML", []string{"--train", tr, "--config", config("q.toml", "dim = \"8\"\n")}, `dim: want an integer, got the string "8"`, false},
		{"a quoted bool in TOML", []string{"--train", tr, "--config", config("b.toml", "keep-best = \"true\"\n")}, `keep-best: want true or false, got the string "true"`, false},
		{"a huge integer in TOML", []string{"--train", tr, "--config", config("h.toml", "dim = 9223372036854775807\n")}, "dim: 9223372036854775807 is too large (at most 2^53)", false},
		{"a quoted number in YAML", []string{"--train", tr, "--config", config("n.yaml", "lr: \"1e-3\"\n")}, `lr: want a number, got the string "1e-3"`, false},
		{"patience without validation steps", []string{"--train", tr, "--valid", va, "--patience", "2", "--eval-every", "0"}, "patience 2 counts validations during training, but eval-every is 0", false},
		{"patience without valid", []string{"--train", tr, "--patience", "2"}, "--patience 2 compares validations: give the held-out queries with --valid FILE", false},
		{"keep-best without valid", []string{"--train", tr, "--keep-best"}, "--keep-best compares validations", false},
		{"unknown best metric", []string{"--train", tr, "--valid", va, "--keep-best", "--best-metric", "auc:epfo"}, `best-metric "auc:epfo": unknown measure "auc"`, false},
		{"best metric alone", []string{"--train", tr, "--valid", va, "--best-metric", "mrr:2p"}, "best-metric mrr:2p chooses what --keep-best and --patience compare", false},
		{"best metric of a type not validated", []string{"--train", tr, "--valid", va, "--keep-best", "--best-metric", "mrr:4p"}, "best-metric mrr:4p: " + va + " has no 4p queries", false},
		{"best without keep-best", []string{"--train", tr, "--valid", va, "--best", "b.arrow"}, "--best b.arrow is where --keep-best writes the best checkpoint: give --keep-best with it", false},
		{"negative patience", []string{"--train", tr, "--valid", va, "--patience", "-1"}, "patience must not be negative", false},
		{"resume and auto-resume", []string{"--train", tr, "--auto-resume", "--resume"}, "give one of them", false},
		{"resume adding patience", []string{"--train", tr, "--valid", va, "--patience", "2"}, "kept no best validation to count from", true},
		{"resume adding keep-best", []string{"--train", tr, "--valid", va, "--keep-best"}, "sets keep_best true, the checkpoint was trained with keep_best false", true},
		{"resume another model", []string{"--train", tr, "--model", "cone"}, "--model", true},
		{"resume another dim", []string{"--train", tr, "--dim", "16"}, "--dim", true},
		{"resume another preset", []string{"--train", tr, "--preset", "fb15k-237"}, "--preset fb15k-237", true},
		{"resume train file of another KG", []string{"--train", biggerTrain}, "50 relations", true},
		{"resume steps below done", []string{"--train", tr, "--steps", "1"}, "below the 2 steps", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			path := filepath.Join(out, "m.arrow")
			args := slices.Clone(tc.args)
			if tc.resume {
				path = ck
				args = append(args, "--resume", "--log", filepath.Join(out, "log.arrow"))
			}
			args = append(args, "--checkpoint", path, "--steps", "2", "-q")
			if tc.resume && slices.Contains(tc.args, "--steps") {
				args = append(tc.args, "--resume", "--checkpoint", path, "-q")
			}
			err := runApp(args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if got := entries(t, out); len(got) != 0 {
				t.Errorf("wrote %v", got)
			}
			if now, _ := os.ReadFile(ck); !bytes.Equal(now, ckBytes) {
				t.Error("the checkpoint changed")
			}
		})
	}
	if err := runApp("--train", tr, "--checkpoint", filepath.Join(t.TempDir(), "none.arrow"), "--resume", "-q"); err == nil ||
		!strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("resume without a checkpoint: %v", err)
	}
}

// TestKilled builds the command, starts a run that checkpoints every step, kills it with
// SIGKILL mid-run, checks that the checkpoint reads and is complete, resumes it to the
// end, and compares the result with a straight run byte for byte.
func TestKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	tr, va := data(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "train")
	if out, err := stagebuild.Command(bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const steps = 60
	ck := filepath.Join(dir, "killed.arrow")
	common := append([]string{"--train", tr, "--valid", va, "--steps", "60", "--eval-every", "7"}, tiny...)
	// The run blocks once step 40 is checkpointed, so it is certainly not finished when
	// it is killed, however fast the machine.
	cmd := exec.Command(bin, append(common, "--checkpoint", ck, "--checkpoint-every", "1", "--test-hang-after", "40", "--workers", "2")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		if meta, err := artifact.ReadCheckpointMeta(ck); err == nil && meta.Step >= 10 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("train exited before it was killed: %v\n%s", err, stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited

	killed, err := artifact.ReadCheckpoint(ck)
	if err != nil {
		t.Fatalf("the checkpoint left by the killed run does not read: %v", err)
	}
	if killed.Meta.Step < 10 || killed.Meta.Step > 40 {
		t.Fatalf("killed run's checkpoint holds %d steps", killed.Meta.Step)
	}
	if len(killed.Tensors) == 0 || len(killed.Tensors)%3 != 0 {
		t.Fatalf("killed run's checkpoint holds %d tensors", len(killed.Tensors))
	}
	t.Logf("killed after %d steps", killed.Meta.Step)

	resume := exec.Command(bin, append(common, "--checkpoint", ck, "--resume", "--workers", "1")...)
	if out, err := resume.CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}

	// The straight run, in process, with the same flags.
	straight := filepath.Join(dir, "straight.arrow")
	if err := runApp(append(common, "--checkpoint", straight)...); err != nil {
		t.Fatal(err)
	}
	meta, err := artifact.ReadCheckpointMeta(straight)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Step != steps {
		t.Fatalf("the straight run's checkpoint holds %d steps, want %d", meta.Step, steps)
	}
	artifacttest.SameTensors(t, straight, ck)
	// The log of the killed and resumed run has every step once.
	artifacttest.EachStepOnce(t, strings.TrimSuffix(ck, ".arrow")+"-log.arrow", steps)
}
