package artifact

import (
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/rocone/rocone/pkg/shard"
)

// TestQueriesMetaChecks: CreateQueries refuses metadata the readers would not accept,
// naming the file and the field; counts of zero are valid (a KG without relations has
// queries of no relation), and such a file reads back.
func TestQueriesMetaChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta QueriesMeta
		want string // "" when accepted
	}{
		{"empty split", QueriesMeta{Dataset: "toy", NumEntities: 1, NumRelations: 1}, "queries metadata: empty split"},
		{"empty dataset", QueriesMeta{Split: "test", NumEntities: 1, NumRelations: 1}, "queries metadata: empty dataset"},
		{"negative entities", QueriesMeta{Split: "test", Dataset: "toy", NumEntities: -1, NumRelations: 1}, "queries metadata: negative num_entities or num_relations"},
		{"negative relations", QueriesMeta{Split: "test", Dataset: "toy", NumEntities: 1, NumRelations: -1}, "queries metadata: negative num_entities or num_relations"},
		{"zero counts", QueriesMeta{Split: "test", Dataset: "toy"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.arrow")
			err := WriteQueries(path, tc.meta, nil)
			if writeRefused(t, path, err, tc.want) {
				return
			}
			meta, qs, err := ReadQueries(path)
			if err != nil {
				t.Fatal(err)
			}
			if meta != tc.meta || len(qs) != 0 {
				t.Errorf("read %+v and %d queries, want %+v and none", meta, len(qs), tc.meta)
			}
		})
	}
}

// TestQueriesReadChecks: the readers refuse rows that the writer would not write, naming
// the file and the row; an attempt of 0 is valid.
func TestQueriesReadChecks(t *testing.T) {
	plain := testSchema(func(md map[string]string, f []arrow.Field) []arrow.Field { return f })
	sharded := testSchema(func(md map[string]string, f []arrow.Field) []arrow.Field {
		md[shard.MetaKey] = "0/2"
		return append(f, queriesShardSpec.fields[colAttempt])
	})
	row := func(b *array.RecordBuilder, id int64, structure string, attempt ...int64) {
		b.Field(colID).(*array.Int64Builder).Append(id)
		b.Field(colType).(*array.StringBuilder).Append("1p")
		b.Field(colStructure).(*array.StringBuilder).Append(structure)
		for i, l := range [][]int32{{1}, {2}, {}, {3}} {
			lb := b.Field(colAnchors + i).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues(l, nil)
		}
		for _, a := range attempt {
			b.Field(colAttempt).(*array.Int64Builder).Append(a)
		}
	}
	for _, tc := range []struct {
		name   string
		schema *arrow.Schema
		fill   func(b *array.RecordBuilder)
		want   string // "" when the rows read
	}{
		{"empty structure", plain, func(b *array.RecordBuilder) {
			row(b, 0, "('e',('r',))")
			row(b, 4, "")
		}, "row 1 (id 4): empty structure"},
		{"negative attempt", sharded, func(b *array.RecordBuilder) {
			row(b, 0, "('e',('r',))", 0)
			row(b, 1, "('e',('r',))", -1)
		}, "row 1 (id 1): negative attempt -1"},
		{"attempt 0", sharded, func(b *array.RecordBuilder) {
			row(b, 0, "('e',('r',))", 0)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.arrow")
			writeRaw(t, path, tc.schema, tc.fill)
			r, err := OpenQueries(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			n := 0
			for r.Next() {
				n++
			}
			err = r.Err()
			if tc.want == "" {
				if err != nil || n == 0 {
					t.Errorf("read %d rows, err = %v; want rows and no error", n, err)
				}
				return
			}
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// writeRefused checks a write's error: none when want is "", else "PATH: want". It reports
// whether the write was to be refused (the case's checks end there).
func writeRefused(t *testing.T, path string, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if want := path + ": " + want; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	return true
}
