package sample

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
)

// TestSameRun: two shards of one run differ only in the shard; each other difference is
// named with both values.
func TestSameRun(t *testing.T) {
	base := artifact.QueriesMeta{Dataset: "d", Split: "test", NumEntities: 300, NumRelations: 20,
		EntitiesDigest: "e0123456789abcdef", KGDigest: "k0123456789abcdef", Sampling: `{"seed":1}`, Shard: shard.Spec{Index: 0, Count: 3}}
	for _, tc := range []struct {
		name string
		edit func(*artifact.QueriesMeta)
		want string // after "a.arrow and b.arrow are shards of different runs ("; "" when the same run
	}{
		{"another shard", func(m *artifact.QueriesMeta) { m.Shard = shard.Spec{Index: 1, Count: 3} }, ""},
		{"dataset", func(m *artifact.QueriesMeta) { m.Dataset = "x" }, "dataset d vs x"},
		{"split", func(m *artifact.QueriesMeta) { m.Split = "valid" }, "split test vs valid"},
		{"entities", func(m *artifact.QueriesMeta) { m.NumEntities = 301 }, "entities and relations 300 and 20 vs 301 and 20"},
		{"relations", func(m *artifact.QueriesMeta) { m.NumRelations = 22 }, "entities and relations 300 and 20 vs 300 and 22"},
		{"entity table", func(m *artifact.QueriesMeta) { m.EntitiesDigest = "eXYZ3456789abcdef" }, "entity table digest e0123456789a vs eXYZ3456789a"},
		{"KG", func(m *artifact.QueriesMeta) { m.KGDigest = "kXYZ3456789abcdef" }, "KG digest k0123456789a vs kXYZ3456789a"},
		{"sampling", func(m *artifact.QueriesMeta) { m.Sampling = `{"seed":2}` }, `sampling options {"seed":1} vs {"seed":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := base
			tc.edit(&other)
			err := sameRun("a.arrow", base, "b.arrow", other)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := "a.arrow and b.arrow are shards of different runs (" + tc.want + "): merge the shards of one sample generate run"
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestParseCoverage: a shard's shard_coverage must be there, be JSON, be in this version's
// blocks, list the run's types and hold no negative count.
func TestParseCoverage(t *testing.T) {
	good := fmt.Sprintf(`{"block_size":%d,"margin":0.1,"types":[{"type":"1p","count":-1,"blocks":0,"rows":5},{"type":"2p","count":10,"blocks":2,"rows":0}]}`, attemptsPerBlock)
	c, err := parseCoverage("s.arrow", good, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.String() != good {
		t.Errorf("coverage reads back as %s, want %s", c.String(), good)
	}
	for _, tc := range []struct {
		name, meta string
		ntypes     int
		want       string
	}{
		{"missing", "", 2, "s.arrow: a shard without shard_coverage metadata: written by an older sample generate; generate the shards again"},
		{"not JSON", "{", 2, `s.arrow: shard metadata shard_coverage="{": `},
		{"block size", strings.Replace(good, fmt.Sprint(attemptsPerBlock), "100", 1), 2, fmt.Sprintf("s.arrow: shard sampled in blocks of 100 attempts, this sample merges blocks of %d: generate the shards again with this version", attemptsPerBlock)},
		{"types", good, 3, "s.arrow: shard metadata shard_coverage has 2 types, the run's options 3"},
		{"negative blocks", strings.Replace(good, `"blocks":2`, `"blocks":-1`, 1), 2, "s.arrow: shard metadata shard_coverage: type 2p: negative blocks or rows"},
		{"negative rows", strings.Replace(good, `"rows":5`, `"rows":-5`, 1), 2, "s.arrow: shard metadata shard_coverage: type 1p: negative blocks or rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCoverage("s.arrow", tc.meta, tc.ntypes)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestPrintStats: per file, its header, then per type (the papers' order, custom structures
// last) the queries and mean easy and hard answers, then the total; a shard says
// it is one; a file given twice is refused before anything is printed.
func TestPrintStats(t *testing.T) {
	dir := t.TempDir()
	meta := artifact.QueriesMeta{Split: "test", Dataset: "tiny", NumEntities: 10, NumRelations: 4}
	id := int64(0)
	q := func(typ, structure string, easy, hard int) artifact.Query {
		id++
		s := artifact.Query{ID: id, Type: typ, Structure: structure}
		switch structure {
		case "('e',('r',))":
			s.Anchors, s.Relations = []int32{0}, []int32{1}
		case "('e',('r','r'))":
			s.Anchors, s.Relations = []int32{0}, []int32{1, 2}
		case "('e',('r','r','r','r'))":
			s.Anchors, s.Relations = []int32{0}, []int32{1, 2, 3, 0}
		}
		for i := range easy {
			s.Easy = append(s.Easy, int32(i))
		}
		for i := range hard {
			s.Hard = append(s.Hard, int32(5+i))
		}
		return s
	}
	whole := dir + "/whole.arrow"
	if err := artifact.WriteQueries(whole, meta, []artifact.Query{
		q("custom", "('e',('r','r','r','r'))", 0, 1), q("2p", "('e',('r','r'))", 1, 2), q("1p", "('e',('r',))", 2, 1), q("2p", "('e',('r','r'))", 0, 1), q("custom", "('e',('r','r','r','r'))", 1, 3),
	}); err != nil {
		t.Fatal(err)
	}
	part := dir + "/part.arrow"
	meta.Shard = shard.Spec{Index: 1, Count: 3}
	meta.Sampling = `{"seed":1}`
	meta.Coverage = fmt.Sprintf(`{"block_size":%d,"types":[]}`, attemptsPerBlock)
	w, err := artifact.CreateQueries(part, meta)
	if err != nil {
		t.Fatal(err)
	}
	one := q("1p", "('e',('r',))", 1, 1)
	if err := w.WriteShard(&one, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := PrintStats(&out, []string{whole, part}); err != nil {
		t.Fatal(err)
	}
	want := whole + `: tiny test (10 entities, 4 relations)

| type   |  queries | mean easy | mean hard |
|--------|---------:|----------:|----------:|
| 1p     |        1 |       2.0 |       1.0 |
| 2p     |        2 |       0.5 |       1.5 |
| custom |        2 |       0.5 |       2.0 |
| all    |        5 |           |           |

` + part + `: tiny test (10 entities, 4 relations)
shard 1/3 of a sampling run: a part of the split, not a queries file to train or rank on (join the 3 shards with sample merge)

| type   |  queries | mean easy | mean hard |
|--------|---------:|----------:|----------:|
| 1p     |        1 |       1.0 |       1.0 |
| all    |        1 |           |           |

`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := PrintStats(&out, []string{whole, part, whole}); err == nil || out.Len() != 0 {
		t.Fatalf("a file given twice: err %v, printed %q", err, out.String())
	}
}

// TestSameGrounding: two subtrees are the same grounding when their shapes and every id
// agree, down through nested intersections; one id changed anywhere makes them differ.
func TestSameGrounding(t *testing.T) {
	// An intersection of two ip subtrees: each a chain over an intersection of two 1p.
	s := query.MustParse("(((('e',('r',)),('e',('r',))),('r',)),((('e',('r',)),('e',('r',))),('r',)))")
	a, b := s.Root.Branches[0], s.Root.Branches[1]
	same := func() *query.Grounded {
		return &query.Grounded{Structure: s, Anchors: []int32{1, 1, 1, 1}, Relations: []int32{2, 2, 2, 2, 2, 2}}
	}
	if !sameGrounding(same(), a, b) {
		t.Fatal("the same ids in the same shapes: not the same grounding")
	}
	if sameGrounding(same(), a, a.Base) {
		t.Fatal("a chain and an intersection: the same grounding")
	}
	for i := range s.NumAnchors {
		q := same()
		q.Anchors[i] = 3
		if sameGrounding(q, a, b) {
			t.Errorf("anchor %d changed: still the same grounding", i)
		}
	}
	for i := range s.NumRelations {
		q := same()
		q.Relations[i] = 3
		if sameGrounding(q, a, b) {
			t.Errorf("relation %d changed: still the same grounding", i)
		}
	}
}
