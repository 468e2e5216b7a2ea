package artifact

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/rocone/rocone/pkg/shard"
)

// TestShardQueriesRoundTrip: a shard file (metadata shard i/n) carries each row's attempt
// (the first attempt is numbered 0) and the shard_coverage metadata back to the reader; an ordinary file has no attempt
// column and reads 0 for every row.
func TestShardQueriesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	qs := testQueries(50)
	meta := testMeta
	meta.Shard, meta.Sampling, meta.Coverage = shard.Spec{Index: 1, Count: 3}, `{"seed":1}`, `{"block_size":256}`
	path := filepath.Join(dir, "s.arrow")
	w, err := CreateQueries(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		if err := w.WriteShard(&qs[i], int64(7*i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenQueries(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta() != meta {
		t.Errorf("metadata %+v, want %+v", r.Meta(), meta)
	}
	var got []Query
	for r.Next() {
		if want := int64(7 * len(got)); r.Attempt() != want {
			t.Errorf("row %d: attempt %d, want %d", len(got), r.Attempt(), want)
		}
		got = append(got, r.Query())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	sameQueries(t, got, qs)

	// ReadQueries reads a shard file's queries too (sample stats does).
	if _, all, err := ReadQueries(path); err != nil {
		t.Fatal(err)
	} else {
		sameQueries(t, all, qs)
	}

	whole := filepath.Join(dir, "w.arrow")
	if err := WriteQueries(whole, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	wr, err := OpenQueries(whole)
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	if n := len(wr.r.Schema().Fields()); n != len(queriesSpec.fields) {
		t.Errorf("an ordinary queries file has %d columns, want %d (no attempt column)", n, len(queriesSpec.fields))
	}
	for wr.Next() {
		if wr.Attempt() != 0 {
			t.Fatalf("ordinary file: attempt %d, want 0", wr.Attempt())
		}
	}
}

// TestShardQueriesWriteChecks: rows of a shard file are written with their attempt and
// those of an ordinary file without; a negative attempt is refused and the writer stays
// usable.
func TestShardQueriesWriteChecks(t *testing.T) {
	dir := t.TempDir()
	q := testQueries(1)[0]
	shardMeta := testMeta
	shardMeta.Shard = shard.Spec{Index: 0, Count: 2}
	for _, tc := range []struct {
		name  string
		meta  QueriesMeta
		write func(w *QueriesWriter) error
		want  string
	}{
		{"Write to a shard file", shardMeta, func(w *QueriesWriter) error { return w.Write(&q) }, "a shard file's rows carry their attempt (WriteShard)"},
		{"WriteShard to an ordinary file", testMeta, func(w *QueriesWriter) error { return w.WriteShard(&q, 3) }, "not a shard file: only shard files record attempts"},
		{"negative attempt", shardMeta, func(w *QueriesWriter) error { return w.WriteShard(&q, -1) }, "negative attempt -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := CreateQueries(filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".arrow"), tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if err := tc.write(w); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			// Still usable: the right call for the file writes the row.
			if tc.meta.Shard.Whole() {
				err = w.Write(&q)
			} else {
				err = w.WriteShard(&q, 5)
			}
			if err != nil {
				t.Fatalf("after the refused row: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestShardQueriesOldFormat: a shard file without the attempt column (written by the
// sample generate before it) is refused with a message saying to generate it again.
func TestShardQueriesOldFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.arrow")
	schema := testSchema(func(md map[string]string, fields []arrow.Field) []arrow.Field {
		md["shard"] = "1/2"
		return fields
	})
	writeRaw(t, path, schema, nil)
	_, err := OpenQueries(path)
	if want := "shard 1/2 of a sampling run without the attempt column: written by an older sample generate"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one saying %q", err, want)
	}
}
