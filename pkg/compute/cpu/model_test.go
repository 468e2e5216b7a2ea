package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// TestModelMatchesReference runs the whole float32 model — every variant, every
// training structure, dropout on — with the fast backend and with the reference
// kernels, and compares the loss, the gradients and the evaluation scores (the latter
// also through a prepared entity table).
func TestModelMatchesReference(t *testing.T) {
	var ss []*query.Structure
	for _, name := range query.TrainTypes {
		s, _ := query.ByName(name)
		ss = append(ss, s)
	}
	for _, v := range model.Variants {
		cfg := model.Config{Variant: v, NumEntities: 300, NumRelations: 7, Dim: 40, Gamma: 12,
			CenterReg: 0.02, Drop: 0.1, ConeHidden: 50, Seed: 5}
		ref, err := model.New[float32](cfg, compute.Reference[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		fast, err := model.New[float32](cfg, cpu.New(cpu.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		b := model.RandomBatch(rand.New(rand.NewPCG(7, 8)), cfg, ss, 5, 16)
		l1, err := ref.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		l2, err := fast.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(l2.Loss-l1.Loss) <= 1e-5*math.Abs(l1.Loss)) {
			t.Fatalf("%s: loss %g, reference %g", v, l2.Loss, l1.Loss)
		}
		g1, g2 := ref.NewGrads(), fast.NewGrads()
		l1.Backward(g1)
		l2.Backward(g2)
		t2 := g2.Tensors()
		for i, t1 := range g1.Tensors() {
			var diff, norm float64
			for j, x := range t1.Data {
				d := float64(t2[i].Data[j] - x)
				diff += d * d
				norm += float64(x) * float64(x)
			}
			if !(math.Sqrt(diff) <= 1e-4*math.Sqrt(norm)+1e-7) {
				t.Fatalf("%s %s: |fast − reference| = %g, |reference| = %g", v, t1.Name, math.Sqrt(diff), math.Sqrt(norm))
			}
		}

		qs := b.Queries[:20]
		s1, s2 := make([]float32, len(qs)*cfg.NumEntities), make([]float32, len(qs)*cfg.NumEntities)
		if err := ref.NewScorer().Score(s1, qs); err != nil {
			t.Fatal(err)
		}
		if err := fast.NewScorer().Score(s2, qs); err != nil {
			t.Fatal(err)
		}
		for i := range s1 {
			if d := math.Abs(float64(s2[i] - s1[i])); !(d <= 1e-4*math.Max(1, math.Abs(float64(s1[i])))) {
				t.Fatalf("%s: score[%d] = %g, reference %g", v, i, s2[i], s1[i])
			}
		}
	}
}
