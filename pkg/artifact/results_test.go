package artifact

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// batchRows reads the artifact at path and returns the number of rows of each of its
// record batches.
func batchRows(t *testing.T, path string) []int64 {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []int64
	for r.Next() {
		rows = append(rows, r.Record().NumRows())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestConesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	meta := ConesMeta{Dim: 3, Aperture: "half", Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 82,
		Checkpoint: "m.arrow", CheckpointHash: "ab", Queries: "q.arrow", QueriesHash: "cd"}
	var cones []Cone
	for i := 0; i < 2*maxBatchRows+5; i++ {
		cones = append(cones, Cone{ID: int64(i / 2), Type: "2u", Branch: int8(i % 2),
			Axis: []float32{float32(i), -1, 2}, Aperture: []float32{0, float32(math.Pi), 0.5}})
	}
	path := filepath.Join(dir, "c.arrow")
	w, err := CreateCones(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cones {
		if err := w.Write(&cones[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(&Cone{ID: 9, Axis: []float32{1}, Aperture: []float32{1}}); err == nil || !strings.Contains(err.Error(), "want 3") {
		t.Fatalf("a cone of the wrong dimension: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dim := range []int{0, -1} {
		bad := meta
		bad.Dim = dim
		if _, err := CreateCones(filepath.Join(dir, "bad.arrow"), bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("positive dimension, got %d", dim)) {
			t.Errorf("dimension %d: %v", dim, err)
		}
	}
	gotMeta, got, err := ReadCones(path)
	if err != nil {
		t.Fatal(err)
	}
	if gotMeta != meta || !reflect.DeepEqual(got, cones) {
		t.Fatalf("read back %+v and %d cones", gotMeta, len(got))
	}
	// The writer flushes a batch every maxBatchRows rows, and the rest at close.
	if got, want := batchRows(t, path), []int64{maxBatchRows, maxBatchRows, 5}; !slices.Equal(got, want) {
		t.Errorf("%d batches, the first of %v rows, want %v", len(got), got[:min(len(got), 3)], want)
	}
	// A cones file is not a ranks file.
	if _, _, err := ReadRanks(path); err == nil || !strings.Contains(err.Error(), `artifact is "cones", want "ranks"`) {
		t.Fatalf("wrong kind: %v", err)
	}
}

func TestRanksRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, topK := range []int{0, 2} {
		meta := RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 82, NumQueries: 2, Queries: "q",
			QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3", TopK: topK}
		rows := []Rank{{ID: 0, Type: "1p", Answer: 5, Rank: 1}, {ID: 1, Type: "2in", Answer: 7, Rank: 82}}
		if topK > 0 {
			for i := range rows {
				rows[i].Top, rows[i].TopScores, rows[i].TopNames = []int32{5, 6}, []float32{2, 1}, []string{"a", "b"}
			}
		}
		path := filepath.Join(dir, "r.arrow")
		w, err := CreateRanks(path, meta)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if err := w.Write(&rows[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Write(&Rank{ID: 3, Rank: 0}); err == nil {
			t.Fatal("rank 0 accepted")
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		gotMeta, got, err := ReadRanks(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			rows[i].Top, rows[i].TopScores, rows[i].TopNames = nil, nil, nil
		}
		if gotMeta != meta || !reflect.DeepEqual(got, rows) {
			t.Fatalf("top %d: read back %+v %+v", topK, gotMeta, got)
		}
	}
}

func TestMetricsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.arrow")
	seeds := MetricsMeta{Dataset: "fb15k-237", Model: "rocone", Split: "test", Runs: []string{"a.arrow", "b.arrow"}, Resamples: 1000, Level: 0.95}
	one := MetricsMeta{Dataset: "fb15k-237", Model: "rocone", Split: "test", Runs: []string{"a.arrow"}, Resamples: 0, Level: 0.9,
		Queries: "qd", TrainConfig: `{"dim":4}`, Seed: "7", CheckpointHash: "ab", KGDigest: "kg", TrainFingerprint: "tf"}
	// The last row is at the bounds a row may reach: no queries, and fractions of 1.
	rows := []MetricsRow{{Kind: "type", Name: "1p", Queries: 10, Seeds: 2, MRR: MetricStat{0.4, 0.01, 0.38, 0.42}},
		{Kind: "average", Name: "EPFO", Queries: 90, Seeds: 2, H10: MetricStat{0.5, 0, math.NaN(), math.NaN()}},
		{Kind: "type", Name: "3in", Queries: 0, Seeds: 1, H1: MetricStat{1, 1, 1, 1}}}
	for _, meta := range []MetricsMeta{seeds, one} {
		if err := WriteMetrics(path, meta, rows); err != nil {
			t.Fatal(err)
		}
		gotMeta, got, err := ReadMetrics(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotMeta, meta) || len(got) != 3 || got[0].MRR != rows[0].MRR || !math.IsNaN(got[1].H10.Lo) || got[2] != rows[2] {
			t.Fatalf("read back %+v %+v", gotMeta, got)
		}
	}
}

func TestEmptyAndTruncatedResults(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.arrow")
	w, _ := CreateRanks(empty, RanksMeta{NumEntities: 5})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRanks(empty); err == nil || !strings.Contains(err.Error(), "empty.arrow: empty artifact") {
		t.Fatalf("empty ranks: %v", err)
	}
	full := filepath.Join(dir, "full.arrow")
	w, _ = CreateRanks(full, RanksMeta{NumEntities: 5})
	for i := 0; i < 1000; i++ {
		w.Write(&Rank{ID: int64(i), Type: "1p", Answer: 1, Rank: 2})
	}
	w.Close()
	b, _ := os.ReadFile(full)
	cut := filepath.Join(dir, "cut.arrow")
	os.WriteFile(cut, b[:len(b)*2/3], 0o644)
	if _, _, err := ReadRanks(cut); err == nil || !strings.Contains(err.Error(), "cut.arrow") {
		t.Fatalf("truncated ranks: %v", err)
	}
}

func TestQueriesDigest(t *testing.T) {
	a := []Query{{ID: 1, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{2}, Easy: []int32{}, Hard: []int32{3}}}
	b := []Query{{ID: 1, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{2}, Easy: []int32{3}, Hard: []int32{}}}
	if QueriesDigest(a) == QueriesDigest(b) || QueriesDigest(a) != QueriesDigest(append([]Query(nil), a...)) {
		t.Fatal("digest does not tell easy from hard, or is not stable")
	}
}

// TestFileDigest: the SHA-256 of a file's bytes (the standard test vectors), and errors
// that name the path for a file missing or unreadable.
func TestFileDigest(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte // nil: no file; and for "dir", a directory
		want string // the digest, or the error, with %[1]s for the path
	}{
		{"empty", []byte{}, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", []byte("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"missing", nil, "open %[1]s: "},
		{"dir", nil, "%[1]s: read %[1]s: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if tc.data != nil {
				if err := os.WriteFile(path, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if tc.name == "dir" {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := FileDigest(path)
			if tc.data != nil {
				if err != nil || got != tc.want {
					t.Errorf("digest %q, %v; want %s", got, err, tc.want)
				}
				return
			}
			if want := fmt.Sprintf(tc.want, path); err == nil || got != "" || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("digest %q, err %v; want an error beginning %q", got, err, want)
			}
		})
	}
}

// TestReadersCheckPromises: a reader checks what the format promises, beyond its bytes
// being readable: a ranks file holds rows of exactly num_queries queries (a dropped query
// is named, not averaged away), a cone's half apertures lie in [0, π]; the cones writer
// refuses such a cone too.
func TestReadersCheckPromises(t *testing.T) {
	dir := t.TempDir()
	meta := RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 82, NumQueries: 3, Queries: "q",
		QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3"}
	dropped := filepath.Join(dir, "dropped.arrow")
	w, err := CreateRanks(dropped, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Rank{{ID: 0, Type: "1p", Answer: 5, Rank: 1}, {ID: 0, Type: "1p", Answer: 6, Rank: 3}, {ID: 2, Type: "2p", Answer: 7, Rank: 9}} {
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadRanks(dropped); err == nil || !strings.Contains(err.Error(), dropped+": rows of 2 queries, but its metadata says 3") {
		t.Errorf("a ranks file missing a query: %v", err)
	}

	cmeta := ConesMeta{Dim: 4, Aperture: "half", Model: "rocone", Dataset: "tiny", Split: "test", Queries: "q", QueriesHash: "x"}
	path := filepath.Join(dir, "cones.arrow")
	cw, err := CreateCones(path, cmeta)
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Write(&Cone{ID: 0, Type: "1p", Axis: []float32{0.5, 0.5, 0.5, 0.5}, Aperture: []float32{0.75, 0.75, 4, 0.75}}); err == nil ||
		!strings.Contains(err.Error(), "half aperture[2] = 4 is outside [0, π]") {
		t.Errorf("the writer took an aperture of 4: %v", err)
	}
	if err := cw.Write(&Cone{ID: 0, Type: "1p", Axis: []float32{0.5, 0.5, 0.5, 0.5}, Aperture: []float32{0.25, 0.25, 0.75, 0.25}}); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCones(path); err != nil {
		t.Fatal(err)
	}
	// 0.75 (0x3f400000) appears once, as aperture[2]: make it -1 (0xbf800000).
	b, _ := os.ReadFile(path)
	at := bytes.Index(b, []byte{0, 0, 0x40, 0x3f})
	if at < 0 || bytes.Count(b, []byte{0, 0, 0x40, 0x3f}) != 1 {
		t.Fatalf("0.75 found %d times", bytes.Count(b, []byte{0, 0, 0x40, 0x3f}))
	}
	copy(b[at:], []byte{0, 0, 0x80, 0xbf})
	bad := filepath.Join(dir, "bad-cones.arrow")
	os.WriteFile(bad, b, 0o644)
	if _, _, err := ReadCones(bad); err == nil || !strings.Contains(err.Error(), "half aperture[2] = -1 is outside [0, π]") {
		t.Errorf("an aperture of -1: %v", err)
	}
}
