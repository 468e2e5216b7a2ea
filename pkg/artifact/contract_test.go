package artifact_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/pkg/artifact"
)

// readers by sample kind, returning only the error.
var readers = map[string]func(string) error{
	"queries": func(p string) error { _, _, err := artifact.ReadQueries(p); return err },
	"ranks":   func(p string) error { _, _, err := artifact.ReadRanks(p); return err },
	"cones":   func(p string) error { _, _, err := artifact.ReadCones(p); return err },
	"metrics": func(p string) error { _, _, err := artifact.ReadMetrics(p); return err },
	"answers": func(p string) error { _, _, err := artifact.ReadAnswers(p); return err },
}

type row = artifacttest.Row

// TestContract: an artifact that breaks what its format promises (a row's type matching
// its structure, ids in range, answers sorted, rows in the order written, counts matching
// the metadata), written with a valid checksum so that only the contract is at fault, is
// refused by its reader with an error naming the file and the row.
func TestContract(t *testing.T) {
	for _, tc := range []struct {
		kind, name string
		edit       func(meta map[string]string, rows []row) []row
		msg        string
	}{
		{"queries", "type of another structure", func(_ map[string]string, r []row) []row { r[0]["type"] = "2in"; return r },
			`row 0 (id 0): type "2in", but its structure ('e',('r',)) is 1p`},
		{"queries", "anchors of another structure", func(_ map[string]string, r []row) []row { r[1]["anchors"] = []int32{7}; return r },
			"row 1 (id 3): 1 anchors and 2 relations, but its structure (('e',('r',)),('e',('r','n'))) has 2 and 2"},
		{"queries", "anchor out of range", func(_ map[string]string, r []row) []row { r[0]["anchors"] = []int32{1000}; return r },
			"row 0 (id 0): anchor 1000 out of range [0, 1000)"},
		{"queries", "relation out of range", func(_ map[string]string, r []row) []row { r[0]["relations"] = []int32{-1}; return r },
			"row 0 (id 0): relation -1 out of range [0, 20)"},
		{"queries", "hard answers unsorted", func(_ map[string]string, r []row) []row { slices.Reverse(r[3]["hard"].([]int32)); return r },
			"row 3 (id 9): hard answers not sorted without repeats"},
		{"queries", "easy answer repeated", func(_ map[string]string, r []row) []row { r[2]["easy"] = []int32{26, 26}; return r },
			"row 2 (id 6): easy answers not sorted without repeats: 26 after 26"},
		{"queries", "id repeated", func(_ map[string]string, r []row) []row { r[4]["id"] = int64(3); return r },
			"row 4: duplicate id 3 (also at row 1)"},
		{"ranks", "answer out of range", func(_ map[string]string, r []row) []row { r[0]["answer"] = int32(9); return r },
			"row 0: rank 1 of answer 9 out of range for 9 entities"},
		{"ranks", "rank 0", func(_ map[string]string, r []row) []row { r[1]["rank"] = int32(0); return r },
			"row 1: rank 0 of answer 7 out of range"},
		{"ranks", "a row dropped", func(_ map[string]string, r []row) []row { return r[:1] },
			"rows of 1 queries, but its metadata says 2: rows were dropped or added"},
		{"ranks", "a query's rows apart", func(_ map[string]string, r []row) []row { return append(r, cloneRow(r[0], "answer", int32(6))) },
			"row 2: query 0 again, after rows of other queries"},
		{"ranks", "answers out of order", func(_ map[string]string, r []row) []row {
			return []row{r[0], cloneRow(r[0], "answer", int32(4)), r[1]}
		}, "row 1: query 0: answer 4 after 5"},
		{"ranks", "a top entity out of range", func(_ map[string]string, r []row) []row { r[1]["top"] = []int32{1, 9}; return r },
			"row 1: top entity 9 out of range [0, 9)"},
		{"ranks", "more top entities than K", func(_ map[string]string, r []row) []row {
			r[0]["top"], r[0]["top_scores"], r[0]["top_names"] = []int32{5, 6, 7}, []float32{3, 2, 1}, []string{}
			return r
		}, "row 0: 3 top entities, more than top_k 2"},
		{"ranks", "top scores worst first", func(_ map[string]string, r []row) []row { r[0]["top_scores"] = []float32{1, 2}; return r },
			"row 0: top scores [1 2]: not best first"},
		{"cones", "a branch skipped", func(_ map[string]string, r []row) []row { r[1]["branch"] = int8(2); return r },
			"row 1: query 0: branch 2 after branch 0"},
		{"cones", "a branch repeated", func(_ map[string]string, r []row) []row { r[1]["branch"] = int8(0); return r },
			"row 1: query 0: branch 0 after branch 0"},
		{"cones", "a query beginning past branch 0", func(_ map[string]string, r []row) []row { r[2]["branch"] = int8(1); return r },
			"row 2: query 1 begins with branch 1, not 0"},
		{"cones", "a query's cones apart", func(_ map[string]string, r []row) []row { return append(r, cloneRow(r[1], "id", int64(0))) },
			"row 3: query 0 again"},
		{"cones", "an aperture above π", func(_ map[string]string, r []row) []row { r[2]["aperture"] = []float32{0.5, 10}; return r },
			"row 2 (query 1 branch 0): half aperture[1] = 10 is outside [0, π]"},
		{"cones", "an infinite axis", func(_ map[string]string, r []row) []row { r[1]["axis"] = []float32{float32(math.Inf(1)), 0}; return r },
			"row 1 (query 0 branch 1): axis[0] = +Inf is not finite"},
		{"metrics", "an MRR above 1", func(_ map[string]string, r []row) []row { r[0]["mrr_mean"] = 1.5; return r },
			"row 0 (type 1p): mrr_mean = 1.5 is not a fraction"},
		{"metrics", "an unknown kind", func(_ map[string]string, r []row) []row { r[0]["kind"] = "total"; return r },
			`kind "total", want type or average`},
		{"metrics", "a second row without a name", func(_ map[string]string, r []row) []row { return append(r, cloneRow(r[0], "name", "")) },
			"row 1 (type ): no name"},
		{"answers", "an entity out of range", func(_ map[string]string, r []row) []row { r[0]["entity"] = int32(9); return r },
			"row 0: question 0: entity 9 out of range [0,9)"},
		{"answers", "more known answers than entities", func(_ map[string]string, r []row) []row { r[2]["known_answers"] = int32(10); return r },
			"row 2: question 1: 10 known answers for 9 entities"},
	} {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			src := filepath.Join("testdata", tc.kind+".arrow")
			dst := filepath.Join(t.TempDir(), "bad.arrow")
			artifacttest.Edit(t, src, dst, tc.edit)
			err := readers[tc.kind](dst)
			if err == nil || !strings.HasPrefix(err.Error(), dst+": ") || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "checksum") {
				t.Errorf("%v\nwant %s: ...%s", err, dst, tc.msg)
			}
		})
	}
}

func cloneRow(r row, key string, v any) row {
	out := row{}
	for k, x := range r {
		out[k] = x
	}
	out[key] = v
	return out
}

// TestChangedValue: one value changed inside the body of a file that stays a valid
// Arrow file (the original's checksum spliced over the edit's) is refused by the
// checksum, where before it read as another valid artifact.
func TestChangedValue(t *testing.T) {
	for _, tc := range []struct {
		kind, col string
		row       int
		v         any
	}{
		{"queries", "hard", 3, []int32{93, 110, 128}},
		{"queries", "anchors", 0, []int32{1}},
		{"ranks", "rank", 1, int32(1)},
		{"cones", "aperture", 0, []float32{0.5, 0.25}},
		{"metrics", "mrr_mean", 0, 0.5},
		{"checkpoint", "values", 0, nil},
	} {
		t.Run(tc.kind+"/"+tc.col, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join("testdata", tc.kind+".arrow")
			edited := filepath.Join(dir, "edited.arrow")
			artifacttest.Edit(t, src, edited, func(_ map[string]string, r []row) []row {
				v := tc.v
				if v == nil { // a checkpoint value: the first one, plus one
					vals := slices.Clone(r[tc.row][tc.col].([]float32))
					vals[0]++
					v = vals
				}
				r[tc.row][tc.col] = v
				return r
			})
			// The edit alone is a valid artifact: only the checksum can tell.
			read := readers[tc.kind]
			if read == nil {
				read = func(p string) error { _, err := artifact.ReadCheckpoint(p); return err }
			}
			if err := read(edited); err != nil {
				t.Fatalf("the edit is refused for itself: %v", err)
			}
			bad := filepath.Join(dir, "bad.arrow")
			if err := os.WriteFile(bad, artifacttest.Splice(t, src, edited), 0o644); err != nil {
				t.Fatal(err)
			}
			err := read(bad)
			if err == nil || !strings.HasPrefix(err.Error(), bad+": content checksum mismatch") {
				t.Errorf("%v, want %s: content checksum mismatch", err, bad)
			}
		})
	}
}
