package train

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/qecone"
	"github.com/rocone/rocone/pkg/query"
)

// TestParityAdam runs QE-ConE's five updates of the golden fixture
// (testdata/reference/cone.json, scripts/reference/make_fixtures.py): a brand-new
// torch.optim.Adam over ConE's parameters, fed a path batch, an other batch, a path, an
// other and a path batch, with fixed positives, negatives and dropout masks. The first
// batch has no intersection, so PyTorch leaves the intersection's weights out of that
// update (their .grad is None) and counts their steps from the second: Adam.DeferStart
// and Reach reproduce it. Every parameter must then match QE-ConE's to 1e-5 (relative to
// its tensor's largest value), except intersection.b2, whose exact gradient is 0 (the
// attention's softmax over branches ignores a shift common to all branches): both sides
// step it by ±lr in the sign of rounding noise, and it changes no output.
func TestParityAdam(t *testing.T) {
	f, err := qecone.ReadFixture(filepath.Join("..", "..", "testdata", "reference", "cone.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](f.ModelConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := qecone.SetParams(m.Params, f.Params); err != nil {
		t.Fatal(err)
	}
	params := m.Params.Tensors()
	g := m.NewGrads()
	a := NewAdam(params, f.Adam.LR)
	a.DeferStart()
	for u, fb := range f.Adam.Updates {
		b, err := f.Batch(&fb)
		if err != nil {
			t.Fatal(err)
		}
		src := &qecone.SeedSource{Seeds: fb.DropoutSeeds}
		lt, err := m.Loss(b, rand.New(src))
		if err != nil {
			t.Fatal(err)
		}
		if src.Next != len(src.Seeds) {
			t.Errorf("update %d: %d dropout masks drawn, QE-ConE drew %d", u, src.Next, len(src.Seeds))
		}
		if !(math.Abs(lt.Loss-fb.Loss) <= 1e-5*math.Abs(fb.Loss)) {
			t.Errorf("update %d: loss %.9g, QE-ConE %.9g", u, lt.Loss, fb.Loss)
		}
		lt.Backward(g)
		structures := b.Queries
		ss := make([]*query.Structure, len(structures))
		for i := range structures {
			ss[i] = structures[i].Structure
		}
		reached, err := m.Reached(ss)
		if err != nil {
			t.Fatal(err)
		}
		a.Reach(reached)
		if err := a.Update(params, g.Params.Tensors(), 1); err != nil {
			t.Fatal(err)
		}
		g.Zero()
	}
	for _, p := range params {
		want := f.Adam.Params[p.Name]
		if len(want.Values) != len(p.Data) {
			t.Fatalf("%s: %d values, QE-ConE %d", p.Name, len(p.Data), len(want.Values))
		}
		if p.Name == "intersection.b2" {
			continue
		}
		var scale, worst float64
		at := 0
		for i, w := range want.Values {
			scale = max(scale, math.Abs(float64(w)))
			if e := math.Abs(float64(p.Data[i] - w)); e > worst || math.IsNaN(e) {
				worst, at = e, i
				if math.IsNaN(e) {
					break // the worst there is
				}
			}
		}
		if !(worst <= 1e-5*scale) {
			t.Errorf("%s after 5 updates: off by %.3g (scale %.3g) at %d: %.9g, QE-ConE %.9g", p.Name, worst, scale, at, p.Data[at], want.Values[at])
		}
	}
}
