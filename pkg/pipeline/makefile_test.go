package pipeline

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeCaching runs the pipeline DAG on the tiny KG with two seeds, then checks Make's
// caching: a second run does nothing; touching cones reruns only that seed's rank and the
// metrics; touching the train queries retrains both seeds but samples nothing. Then
// SAMPLE_SHARDS=2 into another OUT: each split is sampled as 2 shards and merged, the merged
// queries are the unsharded run's byte for byte, and a second run does nothing.
func TestMakeCaching(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out := t.TempDir()
	counts := "--count 1p=20,2p=8,3p=8,2i=8,3i=8,ip=8,pi=8,2u=8,up=8,2in=6,3in=6,inp=6,pin=6,pni=6"
	args := []string{"-f", "pipelines/Makefile", "OUT=" + out, "DATA=testdata/tiny", "DATASET=tiny", "SEEDS=0 1",
		"VALID_FLAGS=" + counts, "TEST_FLAGS=" + counts,
		"TRAIN_FLAGS=--dim 8 --steps 4 --batch 16 --negatives 4 --eval-every 2 -q", "METRICS_FLAGS=--resamples 50"}
	make := func(extra ...string) string {
		cmd := exec.Command("make", append(append([]string{}, args...), extra...)...)
		cmd.Dir = "../.."
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", extra, err, got)
		}
		return string(got)
	}
	first := make("metrics")
	if !strings.Contains(first, "bin/train") || !strings.Contains(first, "bin/metrics") {
		t.Fatalf("first run:\n%s", first)
	}
	if again := make("-n", "metrics"); strings.Contains(again, "bin/") {
		t.Fatalf("a second make would run:\n%s", again)
	}
	stages := func(dry string) map[string]int {
		n := map[string]int{}
		for _, line := range strings.Split(dry, "\n") {
			for _, s := range []string{"sample", "train", "embed", "rank", "metrics"} {
				if strings.HasPrefix(strings.TrimPrefix(strings.TrimSpace(line), "exec "), "bin/"+s+" ") {
					n[s]++
				}
			}
		}
		return n
	}
	later := time.Now().Add(2 * time.Second)
	touch := func(rel string) {
		if err := os.Chtimes(filepath.Join(out, rel), later, later); err != nil {
			t.Fatal(err)
		}
	}
	touch("rocone/seed0/cones.arrow")
	if got := stages(make("-n", "metrics")); got["rank"] != 1 || got["metrics"] != 1 || len(got) != 2 {
		t.Errorf("after touching seed 0's cones: %v", got)
	}
	touch("train-queries.arrow")
	if got := stages(make("-n", "metrics")); got["train"] != 2 || got["embed"] != 2 || got["rank"] != 2 || got["sample"] != 0 {
		t.Errorf("after touching the train queries: %v", got)
	}
	time.Sleep(time.Until(later) + 10*time.Millisecond) // past the touched times, so that what is made now is newer
	make("metrics")
	// A ranks file deleted is made again from the cached cones; a seed added is trained,
	// embedded and ranked alone; SHARDS=2 makes its shard files. (A bare .SECONDARY:
	// made every target intermediate, and Make left such missing files unmade.)
	if err := os.Remove(filepath.Join(out, "rocone", "seed1", "ranks.arrow")); err != nil {
		t.Fatal(err)
	}
	if got := stages(make("-n", "metrics")); got["rank"] != 1 || got["metrics"] != 1 || len(got) != 2 {
		t.Errorf("after deleting seed 1's ranks: %v", got)
	}
	// (rank twice: seed 1's, still deleted, and seed 2's.)
	if got := stages(make("-n", "SEEDS=0 1 2", "metrics")); got["train"] != 1 || got["embed"] != 1 || got["rank"] != 2 || got["metrics"] != 1 || got["sample"] != 0 {
		t.Errorf("after adding seed 2: %v", got)
	}
	if got := stages(make("-n", "SHARDS=2", "metrics")); got["embed"] != 4 || got["rank"] != 4 || got["train"] != 0 {
		t.Errorf("SHARDS=2 after an unsharded run: %v", got)
	}
	// Changed flags remake what they make (a stamp under .flags/ holds each stage's), in a
	// dry run too, which writes no stamp.
	make("metrics")
	// Another DATA folder of older files (a copy that keeps their times): the timestamps
	// say the queries are up to date, the stamp of DATA that they are not.
	older := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(older, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.tsv", "valid.tsv", "test.tsv", "entities.tsv", "relations.tsv"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(older, f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		flag string
		want map[string]int
	}{
		{"METRICS_FLAGS=--resamples 60", map[string]int{"metrics": 1}},
		{"SEEDS=0", map[string]int{"metrics": 1}},
		{"DATA=" + older, map[string]int{"sample": 3, "train": 2, "embed": 2, "rank": 2, "metrics": 1}},
		{"TRAIN_FLAGS=--dim 8 --steps 5 --batch 16 --negatives 4 --eval-every 2 -q", map[string]int{"train": 2, "embed": 2, "rank": 2, "metrics": 1}},
		{"TEST_FLAGS=" + strings.Replace(counts, "1p=20", "1p=21", 1), map[string]int{"sample": 1, "embed": 2, "rank": 2, "metrics": 1}},
	} {
		if got := stages(make("-n", c.flag, "metrics")); !maps.Equal(got, c.want) {
			t.Errorf("%s, dry run: %v, want %v", c.flag, got, c.want)
		}
		if got := stages(make(c.flag, "metrics")); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.flag, got, c.want)
		}
		if got := stages(make("-n", c.flag, "metrics")); len(got) != 0 {
			t.Errorf("%s, again: %v", c.flag, got)
		}
		make("metrics") // back to the test's flags: the same stages again (DATA: the same
		// files, so the same queries, but remade)
	}
	// Two makes of one OUT at once take turns at the table (a lock): both succeed, and the
	// table and metrics artifact are there after them. (Without it the second failed on
	// the first's claim of metrics.arrow, and its failure deleted the first's outputs.)
	for _, seed := range []string{"0", "1"} {
		later := time.Now().Add(2 * time.Second)
		if err := os.Chtimes(filepath.Join(out, "rocone", "seed"+seed, "ranks.arrow"), later, later); err != nil {
			t.Fatal(err)
		}
	}
	var runs [2]*exec.Cmd
	var outputs [2]bytes.Buffer
	for i := range runs {
		runs[i] = exec.Command("make", append(append([]string{}, args...), "METRICS_FLAGS=--resamples 20000", "metrics")...)
		runs[i].Dir, runs[i].Stdout, runs[i].Stderr = "../..", &outputs[i], &outputs[i]
		if err := runs[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range runs {
		if err := r.Wait(); err != nil {
			t.Errorf("make %d of two at once: %v\n%s", i, err, outputs[i].String())
		}
	}
	for _, f := range []string{"metrics.md", "metrics.arrow", "mrr.png"} {
		if _, err := os.Stat(filepath.Join(out, "rocone", f)); err != nil {
			t.Errorf("after two makes at once: %v", err)
		}
	}
	make("metrics")
	// The dataset's files in BetaE's .txt form are prerequisites too; its entity labels
	// (which only rank --ask reads) are not.
	txt, txtOut := t.TempDir(), t.TempDir()
	for _, f := range []string{"train", "valid", "test", "entities", "relations", "entity_labels"} {
		ext := ".txt"
		if f == "entities" || f == "relations" || f == "entity_labels" {
			ext = ".tsv"
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tiny", f+".tsv"))
		if os.IsNotExist(err) && f == "entity_labels" {
			b, err = []byte("0\tthe first entity\n"), nil
		}
		if err != nil || os.WriteFile(filepath.Join(txt, f+ext), b, 0o644) != nil {
			t.Fatalf("copying tiny's %s: %v", f, err)
		}
	}
	make("DATA="+txt, "OUT="+txtOut, "queries")
	later = time.Now().Add(2 * time.Second)
	for _, c := range []struct {
		file    string
		samples int
	}{{"entity_labels.tsv", 0}, {"test.txt", 3}} {
		if err := os.Chtimes(filepath.Join(txt, c.file), later, later); err != nil {
			t.Fatal(err)
		}
		if got := stages(make("-n", "DATA="+txt, "OUT="+txtOut, "queries")); got["sample"] != c.samples {
			t.Errorf("after touching %s: %v, want %d sample commands", c.file, got, c.samples)
		}
	}

	// The last OUT= on make's command line wins.
	sharded := t.TempDir()
	ran := make("OUT="+sharded, "SAMPLE_SHARDS=2", "queries")
	if gen, merge := strings.Count(ran, "bin/sample generate "), strings.Count(ran, "bin/sample merge -q -o "); gen != 6 || merge != 3 ||
		strings.Count(ran, " --shard 0/2 -o ") != 3 || strings.Count(ran, " --shard 1/2 -o ") != 3 {
		t.Fatalf("SAMPLE_SHARDS=2 ran %d generate and %d merge commands, want 6 shards and 3 merges:\n%s", gen, merge, ran)
	}
	for _, split := range []string{"train", "valid", "test"} {
		for _, i := range []string{"0", "1"} {
			if _, err := os.Stat(filepath.Join(sharded, "shards", split+"-queries-"+i+"-of-2.arrow")); err != nil {
				t.Errorf("SAMPLE_SHARDS=2: %v", err)
			}
		}
		want, err := os.ReadFile(filepath.Join(out, split+"-queries.arrow"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(sharded, split+"-queries.arrow"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the merged sample shards differ from the unsharded queries", split)
		}
	}
	if again := make("-n", "OUT="+sharded, "SAMPLE_SHARDS=2", "queries"); strings.Contains(again, "bin/") {
		t.Fatalf("a second SAMPLE_SHARDS=2 make would run:\n%s", again)
	}
}

// TestMakeRefusesVariables: values the Makefile cannot work with stop it before anything
// runs, naming the variable: a path with a space (Make splits file names at spaces, so it
// would read and write other files), a number of shards that is not one.
func TestMakeRefusesVariables(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		vars []string
		want string
	}{
		{[]string{"OUT=" + dir + "/a b"}, `OUT="` + dir + `/a b": Make cannot handle a path with spaces`},
		{[]string{"OUT=" + dir, "DATA=testdata/my tiny"}, `DATA="testdata/my tiny": Make cannot handle a path with spaces`},
		{[]string{"OUT=" + dir, "SHARDS=0"}, "SHARDS=0: want a positive number of shards"},
		{[]string{"OUT=" + dir, "SAMPLE_SHARDS=two"}, "SAMPLE_SHARDS=two: want a positive number of sample shards"},
	} {
		cmd := exec.Command("make", append([]string{"-f", "pipelines/Makefile", "-n"}, append(c.vars, "metrics")...)...)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "bin/") {
			t.Errorf("make %v: err %v, output %q; want a refusal containing %q", c.vars, err, out, c.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the refusals left %v in OUT (%v)", entries, err)
	}
}
