package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
)

type row = artifacttest.Row

// TestIntegrity: metrics reads the ranks and the train log that were written or nothing.
// A rank set to 1 in a file that stays a valid Arrow file (which moved the 1p MRR before
// checksums), a dropped row, a stream whose checksum trailer is changed, a log value
// changed: refused by the checksum; a ranks file with a valid checksum but a query's rows
// dropped (num_queries says more) or an answer out of range: refused by the reader. Each
// exits 1 with one message naming the file, writes nothing, changes no file.
func TestIntegrity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	ranks := filepath.Join(dir, "ranks.arrow")
	if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: l.Model1, Queries: l.Test, Output: ranks, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	_, rows := artifacttest.Read(t, ranks)
	worse := slices.IndexFunc(rows, func(r row) bool { return r["rank"].(int32) > 1 }) // set to 1 below
	if worse < 0 {
		t.Fatal("no rank above 1")
	}
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	spliced := func(name, src string, f func(m map[string]string, r []row) []row) string {
		edited := filepath.Join(t.TempDir(), "edited.arrow")
		artifacttest.Edit(t, src, edited, f)
		dst := filepath.Join(bad, name)
		if err := os.WriteFile(dst, artifacttest.Splice(t, src, edited), 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	edit := func(name, src string, f func(m map[string]string, r []row) []row) string {
		dst := filepath.Join(bad, name)
		artifacttest.Edit(t, src, dst, f)
		return dst
	}
	stream := filepath.Join(bad, "ranks.stream.arrow")
	artifacttest.Stream(t, ranks, stream)
	if b, err := os.ReadFile(stream); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(stream, artifacttest.CorruptTrailer(t, b), 0o644); err != nil {
		t.Fatal(err)
	}
	firstID := rows[0]["id"].(int64)
	log := l.Log(l.Model1)
	for _, tc := range []struct {
		name  string
		ranks string // the ranks file given ("-": stdin, from stdin)
		stdin string
		log   string // --log, if any
		blame string
		msg   string
	}{
		{name: "a rank set to 1", ranks: spliced("r-value.arrow", ranks, func(_ map[string]string, r []row) []row {
			r[worse]["rank"] = int32(1)
			return r
		}), msg: "content checksum mismatch"},
		{name: "a row dropped, checksum stale", ranks: spliced("r-dropped.arrow", ranks, func(_ map[string]string, r []row) []row { return r[1:] }),
			msg: "content checksum mismatch"},
		{name: "a query's rows dropped", ranks: edit("r-query.arrow", ranks, func(_ map[string]string, r []row) []row {
			return slices.DeleteFunc(r, func(x row) bool { return x["id"].(int64) == firstID })
		}), msg: "rows of 33 queries, but its metadata says 34: rows were dropped or added"},
		{name: "an answer out of range", ranks: edit("r-range.arrow", ranks, func(_ map[string]string, r []row) []row {
			r[0]["answer"] = int32(82)
			return r
		}), msg: "row 0: rank"},
		{name: "a stream whose checksum trailer is changed", ranks: "-", stdin: stream, blame: "stdin", msg: "content checksum mismatch"},
		{name: "a log value changed", ranks: ranks, log: spliced("log-value.arrow", log, func(_ map[string]string, r []row) []row {
			r[0]["loss"] = r[0]["loss"].(float64) * 2
			return r
		}), msg: "content checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "metrics.arrow")
			args := []string{"--resamples", "0", "-o", out}
			blame := tc.ranks
			if tc.log != "" {
				args = append(args, "--log", tc.log, "--curves", filepath.Join(dir, "curves.svg"))
				blame = tc.log
			}
			if tc.blame != "" {
				blame = tc.blame
			}
			args = append(args, tc.ranks)
			before, inputs := stagetest.SnapshotDir(t, dir), stagetest.SnapshotDir(t, bad)
			var code int
			var stderr string
			if tc.stdin != "" {
				code, stderr = stagetest.RunIn(t, tc.stdin, bin, args...)
			} else {
				code, stderr = stagetest.Run(t, bin, args...)
			}
			if want := "metrics: " + blame + ": "; code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "metrics: ") != 1 {
				t.Errorf("exit %d, stderr %q\nwant exit 1 and %q ... %q", code, stderr, want, tc.msg)
			}
			stagetest.SameDir(t, "run folder", before, stagetest.SnapshotDir(t, dir))
			stagetest.SameDir(t, "bad inputs", inputs, stagetest.SnapshotDir(t, bad))
		})
	}
	// As written, they read, and the metrics carry the run's lineage.
	out := filepath.Join(t.TempDir(), "metrics.arrow")
	if code, stderr := stagetest.Run(t, bin, "--resamples", "0", "-o", out, "--log", log, "--curves", filepath.Join(t.TempDir(), "c.svg"), ranks); code != 0 {
		t.Fatalf("as written: exit %d: %s", code, stderr)
	}
	mm, _, err := artifact.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := artifact.ReadCheckpointMeta(l.Model1)
	if err != nil {
		t.Fatal(err)
	}
	if mm.KGDigest == "" || mm.KGDigest != cm.KGDigest || mm.TrainFingerprint != cm.TrainFingerprint {
		t.Errorf("metrics lineage %q %q, the checkpoint's %q %q", mm.KGDigest, mm.TrainFingerprint, cm.KGDigest, cm.TrainFingerprint)
	}
}
