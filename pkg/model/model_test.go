package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/query"
)

func newTestModel(t *testing.T, cfg Config) *Model[float64] {
	t.Helper()
	m, err := New[float64](cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func embed1(t *testing.T, m *Model[float64], notation string, anchors, relations []int32) *Embedding[float64] {
	t.Helper()
	e, err := m.Embed(query.MustParse(notation), anchors, relations, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// angleDiff is |x − y| modulo 2π.
func angleDiff(x, y float64) float64 { return math.Abs(wrap(x - y)) }

// TestRotationComposes: a 2p query through r0 then r1 equals a 1p query through a
// relation r2 whose angles are the sums (docs/model.md §3.1). The axis composes always
// (mod 2π). The aperture composes exactly while the intermediate h + φ stays in [0, π],
// where neither fold nor clamp acts; here φ0, φ1 ∈ [0.2, 1.4].
func TestRotationComposes(t *testing.T) {
	for _, v := range []Variant{RoConE, RoConETrunc, RoConESE} {
		t.Run(string(v), func(t *testing.T) {
			cfg := testConfig(v)
			m := newTestModel(t, cfg)
			p, d, R := m.Params, cfg.Dim, cfg.EmbeddingRange()
			rng := rand.New(rand.NewPCG(1, 2))
			rawOf := func(angle float64) float64 { return R * math.Atanh(angle/math.Pi) }
			for j := 0; j < d; j++ {
				ax0, ax1 := pi*math.Tanh(p.RelAxis[j]/R), pi*math.Tanh(p.RelAxis[d+j]/R)
				p.RelAxis[2*d+j] = rawOf(wrap(ax0 + ax1))
				if p.RelAperture != nil {
					ph0, ph1 := 0.2+1.2*rng.Float64(), 0.2+1.2*rng.Float64()
					p.RelAperture[j], p.RelAperture[d+j] = rawOf(ph0), rawOf(ph1)
					p.RelAperture[2*d+j] = rawOf(ph0 + ph1)
				}
			}
			for e := int32(0); e < int32(cfg.NumEntities); e++ {
				two := embed1(t, m, "('e',('r','r'))", []int32{e}, []int32{0, 1}).Branches[0]
				one := embed1(t, m, "('e',('r',))", []int32{e}, []int32{2}).Branches[0]
				for j := 0; j < d; j++ {
					if diff := angleDiff(two.Axis[j], one.Axis[j]); !(diff <= 1e-12) {
						t.Fatalf("entity %d dim %d: axis of 2p %g, of 1p %g", e, j, two.Axis[j], one.Axis[j])
					}
					if v != RoConESE && !(math.Abs(two.Half[j]-one.Half[j]) <= 1e-12) {
						t.Fatalf("entity %d dim %d: aperture of 2p %g, of 1p %g", e, j, two.Half[j], one.Half[j])
					}
				}
			}
		})
	}
}

// TestNegateTwice: negation is an involution, as an operator and through the walker.
func TestNegateTwice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := randCones(rng, 50, 4)
	once, twice := NewCones[float64](50, 4), NewCones[float64](50, 4)
	NegateForward(once, in)
	NegateForward(twice, once)
	for i := range in.Axis {
		if !(math.Abs(twice.Axis[i]-in.Axis[i]) <= 1e-12) || !(math.Abs(twice.Half[i]-in.Half[i]) <= 1e-12) {
			t.Fatalf("element %d: (%g, %g) negated twice is (%g, %g)", i, in.Axis[i], in.Half[i], twice.Axis[i], twice.Half[i])
		}
		if !(angleDiff(once.Axis[i], in.Axis[i]+pi) <= 1e-12) || !(math.Abs(once.Half[i]+in.Half[i]-pi) <= 1e-12) {
			t.Fatalf("element %d: negation is not the complement", i)
		}
	}
	for _, v := range Variants {
		m := newTestModel(t, testConfig(v))
		plain := embed1(t, m, "('e',('r',))", []int32{3}, []int32{1}).Branches[0]
		double := embed1(t, m, "('e',('r','n','n'))", []int32{3}, []int32{1}).Branches[0]
		for j := range plain.Axis {
			if !(math.Abs(plain.Axis[j]-double.Axis[j]) <= 1e-12) || !(math.Abs(plain.Half[j]-double.Half[j]) <= 1e-12) {
				t.Fatalf("%s: (e,(r,n,n)) differs from (e,(r,)) in dim %d", v, j)
			}
		}
	}
}

// TestUnionIsMaxOverBranches: a 2u score is the max of its two 1p scores, an up score
// the max of its two 2p scores (DNF, docs/model.md §6).
func TestUnionIsMaxOverBranches(t *testing.T) {
	for _, v := range Variants {
		m := newTestModel(t, testConfig(v))
		sc := m.NewScorer()
		N := m.Config.NumEntities
		g := func(n string, a, r []int32) query.Grounded {
			return query.Grounded{Structure: query.MustParse(n), Anchors: a, Relations: r}
		}
		qs := []query.Grounded{
			g("(('e',('r',)),('e',('r',)),('u',))", []int32{1, 7}, []int32{0, 3}),
			g("('e',('r',))", []int32{1}, []int32{0}),
			g("('e',('r',))", []int32{7}, []int32{3}),
			g("((('e',('r',)),('e',('r',)),('u',)),('r',))", []int32{2, 5}, []int32{4, 1, 2}),
			g("('e',('r','r'))", []int32{2}, []int32{4, 2}),
			g("('e',('r','r'))", []int32{5}, []int32{1, 2}),
		}
		out := make([]float64, len(qs)*N)
		if err := sc.Score(out, qs); err != nil {
			t.Fatal(err)
		}
		for _, u := range []int{0, 3} {
			for e := 0; e < N; e++ {
				want := math.Max(out[(u+1)*N+e], out[(u+2)*N+e])
				if !(math.Abs(out[u*N+e]-want) <= 1e-12) {
					t.Fatalf("%s: %s entity %d: score %g, max of branches %g", v, qs[u].Structure, e, out[u*N+e], want)
				}
			}
		}
	}
}

// TestScorerMatchesLoss: without dropout, the scorer's logits are the ones the loss uses.
func TestScorerMatchesLoss(t *testing.T) {
	var ss []*query.Structure
	for _, ty := range query.Types {
		ss = append(ss, query.MustParse(ty.Notation))
	}
	for _, v := range Variants {
		cfg := testConfig(v)
		m := newTestModel(t, cfg)
		rng := rand.New(rand.NewPCG(5, 6))
		b := RandomBatch(rng, cfg, ss, 2, 3)
		lt, err := m.Loss(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		N := cfg.NumEntities
		out := make([]float64, len(b.Queries)*N)
		if err := m.NewScorer().Score(out, b.Queries); err != nil {
			t.Fatal(err)
		}
		for q := range b.Queries {
			if got, want := lt.pos[q], out[q*N+int(b.Positive[q])]; !(math.Abs(got-want) <= 1e-12) {
				t.Fatalf("%s query %d: loss logit %g, scorer %g", v, q, got, want)
			}
			for j := 0; j < 3; j++ {
				if got, want := lt.neg[q*3+j], out[q*N+int(b.Negative[q*3+j])]; !(math.Abs(got-want) <= 1e-12) {
					t.Fatalf("%s query %d negative %d: loss logit %g, scorer %g", v, q, j, got, want)
				}
			}
		}
	}
}

// TestFloat32MatchesFloat64: the float32 model (the training path) computes the same
// loss and gradients as the float64 one, to float32 precision.
func TestFloat32MatchesFloat64(t *testing.T) {
	var ss []*query.Structure
	for _, name := range query.TrainTypes {
		s, _ := query.ByName(name)
		ss = append(ss, s)
	}
	for _, v := range Variants {
		cfg := Config{Variant: v, NumEntities: 40, NumRelations: 6, Dim: 16, Gamma: 12, CenterReg: 0.02,
			Drop: 0.1, ConeHidden: 24, Seed: 9}
		m64 := newTestModel(t, cfg)
		m32, err := New[float32](cfg, compute.Reference[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		// rocone-se: shifts of 0 put every chained projection exactly on the clip bound
		// (h/π = σ(logit(1e-6)) = 1e-6), a kink where rounding picks the branch; draw
		// them away from it.
		shiftRng := rand.New(rand.NewPCG(3, 3))
		for i := range m64.Params.RelShift {
			m64.Params.RelShift[i] = 2*shiftRng.Float64() - 1
			m32.Params.RelShift[i] = float32(m64.Params.RelShift[i])
		}
		b := RandomBatch(rand.New(rand.NewPCG(7, 8)), cfg, ss, 4, 8)
		l64, err := m64.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		l32, err := m32.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(l32.Loss-l64.Loss) <= 1e-5*math.Abs(l64.Loss)) {
			t.Fatalf("%s: loss float32 %g, float64 %g", v, l32.Loss, l64.Loss)
		}
		g64, g32 := m64.NewGrads(), m32.NewGrads()
		l64.Backward(g64)
		l32.Backward(g32)
		// Per tensor: |g32 − g64| ≤ 1e-4·|g64| + 1e-6·|all of g64| (the absolute part is for
		// tensors whose gradient is zero in exact arithmetic, such as the attention's
		// second bias: a softmax over branches ignores a shift common to all of them).
		var total float64
		for _, t64 := range g64.Tensors() {
			for _, x := range t64.Data {
				total += x * x
			}
		}
		total = math.Sqrt(total)
		t32 := g32.Tensors()
		for i, t64 := range g64.Tensors() {
			var diff, norm float64
			for j, x := range t64.Data {
				diff += (float64(t32[i].Data[j]) - x) * (float64(t32[i].Data[j]) - x)
				norm += x * x
			}
			if !(math.Sqrt(diff) <= 1e-4*math.Sqrt(norm)+1e-6*total) {
				t.Fatalf("%s %s: |g32 − g64| = %g, |g64| = %g", v, t64.Name, math.Sqrt(diff), math.Sqrt(norm))
			}
		}
	}
}

// TestGradsRows: backward marks exactly the rows it writes; Zero clears everything.
func TestGradsRows(t *testing.T) {
	cfg := testConfig(RoConE)
	m := newTestModel(t, cfg)
	s := query.MustParse("(('e',('r',)),('e',('r','n')))")
	b := &Batch{
		Queries:     []query.Grounded{{Structure: s, Anchors: []int32{0, 1}, Relations: []int32{2, 3}}},
		Positive:    []int32{4},
		Negative:    []int32{5, 4},
		NumNegative: 2,
		Weight:      []float64{0.3},
	}
	g := m.NewGrads()
	for range 2 {
		lt, err := m.Loss(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		lt.Backward(g)
		rows := map[int32]bool{}
		for _, r := range g.EntityRows.Rows {
			rows[r] = true
		}
		if len(rows) != 4 || !rows[0] || !rows[1] || !rows[4] || !rows[5] {
			t.Fatalf("entity rows %v, want {0 1 4 5}", g.EntityRows.Rows)
		}
		if len(g.RelationRows.Rows) != 2 {
			t.Fatalf("relation rows %v, want {2 3}", g.RelationRows.Rows)
		}
		d := cfg.Dim
		for e := 0; e < cfg.NumEntities; e++ {
			var nz bool
			for _, x := range g.Entity[e*d : (e+1)*d] {
				nz = nz || x != 0
			}
			if nz && !rows[int32(e)] {
				t.Fatalf("entity row %d has a gradient but is not marked", e)
			}
		}
		g.Zero()
		for _, ten := range g.Tensors() {
			for _, x := range ten.Data {
				if x != 0 {
					t.Fatalf("%s not zero after Zero", ten.Name)
				}
			}
		}
		if len(g.EntityRows.Rows)+len(g.RelationRows.Rows) != 0 {
			t.Fatal("row sets not empty after Zero")
		}
	}
}

// TestInit: deterministic from the seed, within the documented ranges.
func TestInit(t *testing.T) {
	cfg := Config{Variant: ConE, NumEntities: 30, NumRelations: 4, Dim: 8, Gamma: 30, ConeHidden: 10, Seed: 42}
	a, b := newTestModel(t, cfg), newTestModel(t, cfg)
	R := cfg.EmbeddingRange()
	if R != 4 {
		t.Fatalf("R = %g, want (30+2)/8 = 4", R)
	}
	if a.Params.Modulus[0] != 0.5*R {
		t.Fatalf("modulus %g, want %g", a.Params.Modulus[0], 0.5*R)
	}
	ta, tb := a.Params.Tensors(), b.Params.Tensors()
	bounds := map[string]float64{
		"entity": R, "relation.axis": R, "relation.aperture": R,
		"intersection.w1": math.Sqrt(6.0 / 24), "intersection.b1": 1 / math.Sqrt(16),
		"intersection.w4": math.Sqrt(6.0 / 16), "intersection.b4": 1 / math.Sqrt(8),
		"projection.w1": math.Sqrt(6.0 / 26), "projection.w2": math.Sqrt(6.0 / 20),
		"projection.b2": 1 / math.Sqrt(10), "projection.w3": math.Sqrt(6.0 / 26),
	}
	for i := range ta {
		for j, x := range ta[i].Data {
			if x != tb[i].Data[j] {
				t.Fatalf("%s differs between two models with the same seed", ta[i].Name)
			}
			if bd, ok := bounds[ta[i].Name]; ok && !(math.Abs(x) <= bd) {
				t.Fatalf("%s = %g beyond its bound %g", ta[i].Name, x, bd)
			}
		}
	}
	cfg.Seed = 43
	c := newTestModel(t, cfg)
	if c.Params.Entity[0] == a.Params.Entity[0] {
		t.Fatal("different seeds gave the same entity table")
	}
	se := NewParams[float64](Config{Variant: RoConESE, NumEntities: 2, NumRelations: 2, Dim: 3})
	if se.RelShift == nil || se.RelAperture != nil || se.Projection.W1 != nil {
		t.Fatal("rocone-se allocates the shift table, and neither the aperture table nor the MLP")
	}
}

// TestPlanSharesSubtrees: the DNF of an intersection of two unions has four branches
// that share their sub-trees: 4 anchors, 4 projections, 1 negation, 4 intersections.
func TestPlanSharesSubtrees(t *testing.T) {
	p, err := Compile(query.MustParse(customStructures[1]))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.branches) != 4 || len(p.steps) != 13 {
		t.Fatalf("%d branches and %d steps, want 4 and 13", len(p.branches), len(p.steps))
	}
	up, _ := query.ByName("up")
	if p, _ := Compile(up); len(p.branches) != 2 || len(p.steps) != 6 {
		t.Fatalf("up: %d branches and %d steps, want 2 and 6", len(p.branches), len(p.steps))
	}
}

func TestEmbedRejectsBadInput(t *testing.T) {
	m := newTestModel(t, testConfig(RoConE))
	s := query.MustParse("('e',('r',))")
	for _, tc := range []struct{ a, r []int32 }{
		{[]int32{12}, []int32{0}}, {[]int32{0}, []int32{5}}, {[]int32{-1}, []int32{0}}, {[]int32{0, 1}, []int32{0}},
	} {
		if _, err := m.Embed(s, tc.a, tc.r, 1, nil); err == nil {
			t.Fatalf("anchors %v relations %v accepted", tc.a, tc.r)
		}
	}
	if _, err := m.Loss(&Batch{}, nil); err == nil {
		t.Fatal("empty batch accepted")
	}
	if _, err := New[float64](Config{Variant: "x", NumEntities: 1, NumRelations: 1, Dim: 1}, nil); err == nil {
		t.Fatal("unknown variant accepted")
	}
}

// TestMatmulTF32: a model configured with TF32 products runs its linear layers on
// compute.TF32Kernels, and its loss and gradients move from the FP32 model's by about
// TF32's rounding (not at all would mean the setting is ignored; much more, a bug). An
// unknown precision is refused.
func TestMatmulTF32(t *testing.T) {
	var ss []*query.Structure
	for _, name := range query.TrainTypes {
		s, _ := query.ByName(name)
		ss = append(ss, s)
	}
	for _, v := range []Variant{ConE, RoConE} {
		cfg := Config{Variant: v, NumEntities: 40, NumRelations: 6, Dim: 16, Gamma: 12, CenterReg: 0.02,
			Drop: 0.1, ConeHidden: 24, Seed: 9}
		fp, err := New[float32](cfg, compute.Reference[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Matmul = compute.MatmulTF32
		tf, err := New[float32](cfg, compute.Reference[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tf.Kernels.(compute.TF32Kernels[float32]); !ok {
			t.Fatalf("%s: tf32 model's kernels are %T", v, tf.Kernels)
		}
		b := RandomBatch(rand.New(rand.NewPCG(7, 8)), cfg, ss, 4, 8)
		lf, err := fp.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		lt, err := tf.Loss(b, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(lt.Loss - lf.Loss); d == 0 || !(d <= 1e-2*math.Abs(lf.Loss)) {
			t.Fatalf("%s: loss tf32 %.9g, fp32 %.9g", v, lt.Loss, lf.Loss)
		}
		gf, gt := fp.NewGrads(), tf.NewGrads()
		lf.Backward(gf)
		lt.Backward(gt)
		var diff, norm float64
		tt := gt.Tensors()
		for i, tf32 := range gf.Tensors() {
			for j, x := range tf32.Data {
				d := float64(tt[i].Data[j] - x)
				diff += d * d
				norm += float64(x) * float64(x)
			}
		}
		if diff == 0 || !(math.Sqrt(diff) <= 2e-2*math.Sqrt(norm)) {
			t.Fatalf("%s: |g_tf32 − g_fp32| = %g, |g_fp32| = %g", v, math.Sqrt(diff), math.Sqrt(norm))
		}
		t.Logf("%s: loss %.3g relative, gradients %.3g relative", v, math.Abs(lt.Loss-lf.Loss)/math.Abs(lf.Loss), math.Sqrt(diff/norm))
	}
	cfg := Config{Variant: ConE, NumEntities: 4, NumRelations: 2, Dim: 4, Matmul: "bf16"}
	if _, err := New[float32](cfg, nil); err == nil || !strings.Contains(err.Error(), `"bf16"`) {
		t.Fatalf("Matmul bf16: %v", err)
	}
}
