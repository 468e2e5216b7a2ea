package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// TestAdamHand checks two Adam updates and a reset against PyTorch's formulas computed by
// hand in float64.
func TestAdamHand(t *testing.T) {
	p := []float32{0.5, -0.25, 1, 0}
	g1 := []float32{0.1, -2, 0, 1e-3}
	g2 := []float32{-0.3, 1, 0.5, 1e-3}
	params := []model.Tensor[float32]{{Name: "x", Data: slices.Clone(p), Rows: 1, Cols: 4}}
	grads := []model.Tensor[float32]{{Name: "x", Data: g1, Rows: 1, Cols: 4}}
	const lr = 0.01
	a := NewAdam(params, lr)

	want := make([]float64, 4)
	m, v := make([]float64, 4), make([]float64, 4)
	for i := range p {
		want[i] = float64(p[i])
	}
	hand := func(g []float32, step int) {
		for i := range want {
			m[i] = 0.9*m[i] + 0.1*float64(g[i])
			v[i] = 0.999*v[i] + 0.001*float64(g[i])*float64(g[i])
			mhat := m[i] / (1 - math.Pow(0.9, float64(step)))
			denom := math.Sqrt(v[i])/math.Sqrt(1-math.Pow(0.999, float64(step))) + 1e-8
			want[i] -= lr * (m[i] / (1 - math.Pow(0.9, float64(step)))) / denom
			_ = mhat
		}
	}
	check := func(when string) {
		t.Helper()
		for i, x := range params[0].Data {
			if !(math.Abs(float64(x)-want[i]) <= 1e-6*math.Max(1, math.Abs(want[i]))) {
				t.Errorf("%s: p[%d] = %.9g, want %.9g", when, i, x, want[i])
			}
		}
	}
	if err := a.Update(params, grads, 1); err != nil {
		t.Fatal(err)
	}
	hand(g1, 1)
	check("update 1")
	// The first update moves each element with a non-zero gradient by lr·sign(g).
	if d := float64(p[1]) - float64(params[0].Data[1]); !(math.Abs(d+lr) <= 1e-7) {
		t.Errorf("first update moved p[1] by %g, want -lr", d)
	}
	if params[0].Data[2] != p[2] {
		t.Errorf("zero gradient and zero moments moved p[2]")
	}
	grads[0].Data = g2
	if err := a.Update(params, grads, 1); err != nil {
		t.Fatal(err)
	}
	hand(g2, 2)
	check("update 2")
	if a.Step != 2 {
		t.Errorf("step %d", a.Step)
	}

	// Reset: a brand-new optimiser at lr/5; the moments start again from zero.
	a.Reset(lr / 5)
	if a.Step != 0 || slices.ContainsFunc(a.M[0], func(x float32) bool { return x != 0 }) ||
		slices.ContainsFunc(a.V[0], func(x float32) bool { return x != 0 }) {
		t.Fatal("reset left state behind")
	}
	before := slices.Clone(params[0].Data)
	if err := a.Update(params, grads, 1); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		d := float64(before[i]) - float64(params[0].Data[i])
		if !(math.Abs(math.Abs(d)-lr/5) <= 1e-7) || (d > 0) != (g2[i] > 0) {
			t.Errorf("first update after reset moved p[%d] by %g, want %g·sign(g)", i, -d, lr/5)
		}
	}

	// A dense update moves a parameter whose gradient is zero when its moment is not.
	grads[0].Data = []float32{0, 0, 0, 0}
	before = slices.Clone(params[0].Data)
	a.Update(params, grads, 1)
	if params[0].Data[1] == before[1] {
		t.Error("a zero gradient with a non-zero moment did not move the parameter")
	}
}

// TestAdamWorkers checks that splitting the elements between goroutines changes nothing.
func TestAdamWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	sizes := []int{3*adamChunk + 17, 1, 5 * adamChunk}
	var base [][]float32
	var gs [][]float32
	for _, n := range sizes {
		base = append(base, mk(n))
		gs = append(gs, mk(n))
	}
	var results [][]float32
	for _, workers := range []int{1, 2, 3, 7} {
		var params, grads []model.Tensor[float32]
		for i, n := range sizes {
			params = append(params, model.Tensor[float32]{Name: "t", Data: slices.Clone(base[i]), Rows: 1, Cols: n})
			grads = append(grads, model.Tensor[float32]{Name: "t", Data: gs[i], Rows: 1, Cols: n})
		}
		a := NewAdam(params, 1e-3)
		for k := 0; k < 3; k++ {
			if err := a.Update(params, grads, workers); err != nil {
				t.Fatal(err)
			}
		}
		var all []float32
		for i := range params {
			all = append(all, params[i].Data...)
			all = append(all, a.M[i]...)
			all = append(all, a.V[i]...)
		}
		results = append(results, all)
	}
	for i := 1; i < len(results); i++ {
		for j := range results[0] {
			if math.Float32bits(results[0][j]) != math.Float32bits(results[i][j]) {
				t.Fatalf("workers change element %d", j)
			}
		}
	}
}

func TestAdamNonFinite(t *testing.T) {
	params := []model.Tensor[float32]{
		{Name: "a", Data: make([]float32, 4), Rows: 1, Cols: 4},
		{Name: "b", Data: make([]float32, 4), Rows: 2, Cols: 2},
	}
	grads := []model.Tensor[float32]{
		{Name: "a", Data: []float32{1, 2, 3, 4}, Rows: 1, Cols: 4},
		{Name: "b", Data: []float32{1, float32(math.Inf(1)), 3, 4}, Rows: 2, Cols: 2},
	}
	err := NewAdam(params, 1e-3).Update(params, grads, 2)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Tensor != "b" || nf.Index != 1 {
		t.Fatalf("error %v", err)
	}
}

// referenceNegatives is the reference dataloader's negative sampling written the numpy
// way: draw 2k, keep the non-answers, concatenate, repeat until k, truncate.
func referenceNegatives(rng *rand.Rand, n int, answers map[int32]bool, k int) ([]int32, int) {
	var all []int32
	drawn := 0
	for len(all) < k {
		round := make([]int32, 2*k)
		for i := range round {
			round[i] = int32(rng.IntN(n))
		}
		drawn += 2 * k
		for _, e := range round {
			if !answers[e] {
				all = append(all, e)
			}
		}
	}
	return all[:k], drawn
}

func TestNegatives(t *testing.T) {
	const n = 20
	answers := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17} // 3 non-answers
	set := map[int32]bool{}
	for _, a := range answers {
		set[a] = true
	}
	for _, k := range []int{1, 4, 9} {
		for seed := uint64(0); seed < 20; seed++ {
			got, marked := make([]int32, k), make([]int32, k)
			drawn := sampleNegatives(rand.New(rand.NewPCG(seed, 1)), n, answers, k, got, nil)
			marks := newAnswerMarks(n)
			drawnMarked := sampleNegatives(rand.New(rand.NewPCG(seed, 1)), n, answers, k, marked, marks)
			want, wantDrawn := referenceNegatives(rand.New(rand.NewPCG(seed, 1)), n, set, k)
			if !slices.Equal(got, want) || drawn != wantDrawn {
				t.Fatalf("k=%d seed %d: %v (%d drawn), reference %v (%d drawn)", k, seed, got, drawn, want, wantDrawn)
			}
			if !slices.Equal(marked, want) || drawnMarked != wantDrawn {
				t.Fatalf("k=%d seed %d, with marks: %v (%d drawn), reference %v (%d drawn)", k, seed, marked, drawnMarked, want, wantDrawn)
			}
			if slices.ContainsFunc(marks, func(w uint64) bool { return w != 0 }) {
				t.Fatalf("k=%d seed %d: marks left set", k, seed)
			}
			if drawn%(2*k) != 0 {
				t.Fatalf("drew %d, not whole rounds of %d", drawn, 2*k)
			}
			for _, e := range got {
				if set[e] || e < 0 || e >= n {
					t.Fatalf("negative %d is an answer or out of range", e)
				}
			}
		}
	}
}

// testTrainSet is the test train file's rows, train set and pools' members.
func testTrainSet(t *testing.T) ([]artifact.Query, *trainSet, [2][]int32) {
	train, _ := files(t)
	meta, rows, err := artifact.ReadQueries(train)
	if err != nil {
		t.Fatal(err)
	}
	ts, members, err := newTrainSet(rows, meta.NumEntities, meta.NumRelations)
	if err != nil {
		t.Fatal(err)
	}
	return rows, ts, members
}

// TestBatches checks the batches of a real train file: positives are answers, negatives
// are not, weights are (4 + |answers|)^(−1/2), every query of a pool is visited once per
// epoch, the last batch of an epoch holds the rest, and the pools split by shape.
func TestBatches(t *testing.T) {
	rows, ts, members := testTrainSet(t)
	for pi, mem := range members {
		for _, q := range mem {
			if want := pi == 0; IsPath(ts.queries[q].Structure) != want || (rows[q].Type == "1p" || rows[q].Type == "2p" || rows[q].Type == "3p") != want {
				t.Fatalf("query %d (%s) in pool %d", q, rows[q].Type, pi)
			}
		}
	}
	const size, k = 7, 5
	p := newPool(PoolOther, 1, members[1], 3)
	n := len(members[1])
	var sizes []int
	seen := map[int]int{} // query → visits
	var orders [2][]string
	for epoch := 0; epoch < 2; epoch++ {
		for got := 0; got < n; {
			b := p.next(ts, size, k)
			sizes = append(sizes, len(b.Queries))
			got += len(b.Queries)
			for i, q := range b.Queries {
				orders[epoch] = append(orders[epoch], q.String())
				seen[len(orders[epoch])]++
				idx := slices.IndexFunc(rows, func(r artifact.Query) bool {
					return r.Structure == q.Structure.String() && slices.Equal(r.Anchors, q.Anchors) && slices.Equal(r.Relations, q.Relations)
				})
				ans := rows[idx].Hard
				if !slices.Contains(ans, b.Positive[i]) {
					t.Fatalf("positive %d is not an answer", b.Positive[i])
				}
				for _, e := range b.Negative[i*k : (i+1)*k] {
					if slices.Contains(ans, e) {
						t.Fatalf("negative %d is an answer", e)
					}
				}
				if w := 1 / math.Sqrt(4+float64(len(ans))); b.Weight[i] != w {
					t.Fatalf("weight %g, want %g", b.Weight[i], w)
				}
			}
		}
	}
	full, rest := n/size, n%size
	for e := 0; e < 2; e++ {
		for i := 0; i < full; i++ {
			if sizes[e*(full+1)+i] != size {
				t.Fatalf("batch sizes %v", sizes)
			}
		}
		if rest > 0 && sizes[e*(full+1)+full] != rest {
			t.Fatalf("batch sizes %v: last of the epoch should hold %d", sizes, rest)
		}
	}
	a, b := slices.Clone(orders[0]), slices.Clone(orders[1])
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) || slices.Equal(orders[0], orders[1]) {
		t.Error("the second epoch is not a reshuffle of the first")
	}
	if p.epoch != 2 || p.pos != 0 {
		t.Errorf("loader at epoch %d pos %d", p.epoch, p.pos)
	}
}

func TestIsPath(t *testing.T) {
	for notation, want := range map[string]bool{
		"('e',('r',))":                         true,
		"('e',('r','r','r','r'))":              true,
		"('e',('r','n'))":                      false,
		"(('e',('r',)),('e',('r',)))":          false,
		"((('e',('r',)),('e',('r',))),('r',))": false,
		"(('e',('r',)),('e',('r',)),('u',))":   false,
	} {
		if got := IsPath(query.MustParse(notation)); got != want {
			t.Errorf("%s: %v", notation, got)
		}
	}
}

func TestConfig(t *testing.T) {
	c, err := NewConfig("nell995", []Setting{{Key: "dim", Value: 16, Source: "--dim"}, {Key: "lr", Value: 0.5, Source: "--lr"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dim != 16 || c.LR != 0.5 || c.Gamma != 20 || c.Lambda != 0.02 || c.Dropout != 0.2 || c.Steps != 300001 || c.EvalEvery != 60000 || c.Model != "rocone" {
		t.Errorf("nell995 with --dim 16 --lr 0.5: %+v", c)
	}
	if alias, err := NewConfig("nell-995", []Setting{{Key: "dim", Value: 16, Source: "--dim"}, {Key: "lr", Value: 0.5, Source: "--lr"}}); err != nil || alias != c {
		t.Errorf("--preset nell-995 (the dataset folder's name): %+v, %v; want nell995's %+v", alias, err, c)
	}
	if _, err := NewConfig("wn18", nil); err == nil || !strings.Contains(err.Error(), "fb15k-237") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := NewConfig("", []Setting{{Key: "batch", Value: 0, Source: "--batch"}}); err == nil {
		t.Error("batch 0 accepted")
	}
	saved, _ := NewConfig("fb15k-237", nil)
	saved.Dataset, saved.NumEntities, saved.NumRelations = "x", 10, 4
	r, err := ResumeConfig(saved, 100, []Setting{
		{Key: "steps", Value: 400000, Source: "--steps"},
		{Key: "dim", Value: 1600, Source: "--preset fb15k-237"},
		{Key: "lr", Value: 5e-5, Source: "--lr"},
		{Key: "eval_every", Value: 10, Source: "--eval-every"},
	})
	if err != nil || r.Steps != 400000 || r.EvalEvery != 10 {
		t.Fatalf("resume: %v %+v", err, r)
	}
	_, err = ResumeConfig(saved, 100, []Setting{{Key: "dim", Value: 800, Source: "--dim"}})
	if err == nil || !strings.Contains(err.Error(), "--dim") {
		t.Errorf("conflicting --dim: %v", err)
	}
	_, err = ResumeConfig(saved, 100, []Setting{{Key: "model", Value: "cone", Source: "--model"}})
	if err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("conflicting --model: %v", err)
	}
	_, err = ResumeConfig(saved, 100, []Setting{{Key: "steps", Value: 50, Source: "--steps"}})
	if err == nil {
		t.Error("steps below the steps done accepted")
	}
	back, err := ParseConfig(saved.JSON())
	if err != nil || back != saved {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}
