package qecone

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/query"
)

// checkpointDir is the QE-ConE checkpoint made by make_fixtures.py checkpoint: a small
// ConE trained by QE-ConE's train_step at a high learning rate (many angles saturated
// near ±π, as after long runs), saved by main.py's save_model layout, with 25 queries of
// every structure (the 16 of QE-ConE's query_name_dict and 4 custom ones), QE-ConE's
// ranks of their answers and the scores of the first 5 per structure.
var checkpointDir = filepath.Join("..", "..", "testdata", "reference", "qecone-checkpoint")

// RankFixture is ranks.json.
type RankFixture struct {
	NumEntities int            `json:"num_entities"`
	Queries     []FixtureQuery `json:"queries"`
	Ranks       [][]int        `json:"ranks"`
	Scores      Array          `json:"scores"`
}

func readRankFixture(t *testing.T) *RankFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(checkpointDir, "ranks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f RankFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// ranksOf is each answer's filtered rank (1 + the non-answers scored above it, ties by
// entity id), ascending.
func ranksOf(score []float32, answers []int32) []int {
	isAns := map[int32]bool{}
	for _, a := range answers {
		isAns[a] = true
	}
	var out []int
	for _, a := range answers {
		r := 1
		for e, s := range score {
			if !isAns[int32(e)] && (s > score[a] || (s == score[a] && int32(e) < a)) {
				r++
			}
		}
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

func TestImportRanksLikeQEConE(t *testing.T) {
	ck, err := Import(ImportOptions{Checkpoint: checkpointDir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.NewModel(ck, nil)
	if err != nil {
		t.Fatal(err)
	}
	rf := readRankFixture(t)
	N := rf.NumEntities
	qs := make([]query.Grounded, len(rf.Queries))
	for i, q := range rf.Queries {
		s, err := query.Parse(q.Structure)
		if err != nil {
			t.Fatal(err)
		}
		qs[i] = query.Grounded{Structure: s, Anchors: q.Anchors, Relations: q.Relations}
	}
	scores := make([]float32, len(qs)*N)
	if err := m.NewScorer().Score(scores, qs); err != nil {
		t.Fatal(err)
	}
	bad, worst := 0, 0.0
	scored := len(rf.Scores.Values) / N // the first queries have QE-ConE's scores too
	for i, q := range rf.Queries {
		got := scores[i*N : (i+1)*N]
		w := math.NaN()
		if i < scored {
			ref := rf.Scores.Values[i*N : (i+1)*N]
			w = 0
			for e := range ref {
				w = max(w, math.Abs(float64(got[e]-ref[e])))
			}
			worst = max(worst, w)
			if !(w <= 2e-4) {
				t.Errorf("query %d (%s): scores differ from QE-ConE's by up to %.3g", i, q.Name, w)
			}
		}
		gr := ranksOf(got, q.Answers)
		if !equalInts(gr, rf.Ranks[i]) {
			bad++
			t.Errorf("query %d (%s): ranks %v, QE-ConE %v (scores differ by up to %.3g)", i, q.Name, gr, rf.Ranks[i], w)
		}
	}
	t.Logf("%d queries (%d with scores), largest score difference %.3g, %d with other ranks", len(qs), scored, worst, bad)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A pickle may set a dict key twice (SETITEMS with the key again); Python keeps the last
// value, and so does dictGet, for a dict and an OrderedDict alike.
func TestDictGetLastValue(t *testing.T) {
	d := types.NewDict()
	d.Set("model_state_dict", 1)
	d.Set("step", 2)
	d.Set("model_state_dict", 3)
	od := types.NewOrderedDict()
	od.Set("model_state_dict", 1)
	od.Set("model_state_dict", 3)
	for _, m := range []any{d, od} {
		if v, err := dictGet(m, "model_state_dict"); err != nil || v != 3 {
			t.Errorf("%T: got %v, %v; want the last value, 3", m, v, err)
		}
		if _, err := dictGet(m, "missing"); err == nil || err.Error() != `no "missing" entry` {
			t.Errorf("%T: a missing key gives %v", m, err)
		}
	}
	if v, err := dictGet(d, "step"); err != nil || v != 2 {
		t.Errorf("step: got %v, %v", v, err)
	}
}

// TestImportDamagedRecord: a zip record whose bytes do not match its CRC-32 (one byte
// flipped inside a tensor's storage) is refused, naming the file and the record, not
// imported with changed weights.
func TestImportDamagedRecord(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(checkpointDir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	b[20000] ^= 0xff
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l := 0.5
	_, err = Import(ImportOptions{Checkpoint: path, Lambda: &l})
	if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "CRC-32") ||
		!strings.Contains(err.Error(), `zip record "`) {
		t.Fatalf("a damaged record: error %v, want one naming the file, the record and the CRC-32", err)
	}
	t.Log(err)
}

// TestImportConfigCrossCheck: a config.json whose hidden_dim, gamma, nentity or
// nrelation disagrees with the checkpoint's tensors (another run's) is refused, naming
// the key, both values and both files.
func TestImportConfigCrossCheck(t *testing.T) {
	ck := filepath.Join(checkpointDir, "checkpoint")
	for key, c := range map[string]struct {
		val  any
		want string
	}{
		"hidden_dim": {32, "hidden_dim 32 disagrees with the checkpoint " + ck + ", whose dim d is 16"},
		"gamma":      {12.0, "gamma 12 disagrees with the checkpoint " + ck + ", whose gamma is 2"},
		"nentity":    {14505, "nentity 14505 disagrees with the checkpoint " + ck + ", whose entity count is 300"},
		"nrelation":  {474, "nrelation 474 disagrees with the checkpoint " + ck + ", whose relation count is 20"},
		"seed":       {7, ""}, // not implied by the tensors
	} {
		cfg := fixtureConfig(t, func(m map[string]any) { m[key] = c.val })
		_, err := Import(ImportOptions{Checkpoint: ck, Config: cfg})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", key, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), cfg+"'s "+c.want) {
			t.Errorf("%s %v: error %v, want one containing %q", key, c.val, err, cfg+"'s "+c.want)
		}
	}
}
