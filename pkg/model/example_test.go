package model_test

import (
	"fmt"
	"math"
	"slices"

	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// Build a small RoConE model with a fixed seed and embed two 2i queries and one up query.
// A query becomes one cone per DNF branch: N cones of Dim axes and half-apertures each.
// (The numbers themselves are left out: they are floats, and differ in their last bits
// between the fused multiply-adds of arm64 and the separate ones of amd64.)
func ExampleModel_Embed() {
	cfg := model.Config{
		Variant: model.RoConE, NumEntities: 20, NumRelations: 6, Dim: 8,
		Gamma: 12, CenterReg: 0.02, Seed: 1,
	}
	m, err := model.New[float64](cfg, nil) // nil: the reference kernels
	if err != nil {
		panic(err)
	}

	// Two 2i queries: anchors and relations are [n][slots], in the structure's slot order.
	s2i := query.MustParse("(('e',('r',)),('e',('r',)))")
	e, err := m.Embed(s2i, []int32{3, 7, 4, 9}, []int32{0, 2, 1, 5}, 2, nil)
	if err != nil {
		panic(err)
	}
	c := e.Branches[0]
	fmt.Println("2i:", len(e.Branches), "branch of", c.N, "cones in", c.Dim, "dimensions")
	fmt.Println("half-apertures within [0, π]:", !slices.ContainsFunc(c.Half, func(h float64) bool { return h < 0 || h > math.Pi }))

	// A union is embedded in DNF: up gives one cone per branch, scored as a max.
	up, _ := query.ByName("up")
	e, err = m.Embed(up, []int32{3, 7}, []int32{0, 2, 4}, 1, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("up:", len(e.Branches), "branches")

	// Scores of every entity for each query: [queries][entities] logits.
	g, _ := query.ParseGrounded("((3,(0,)),(7,(2,)))")
	scores := make([]float64, 1*cfg.NumEntities)
	if err := m.NewScorer().Score(scores, []query.Grounded{*g}); err != nil {
		panic(err)
	}
	fmt.Println("scores:", len(scores))
	// Output:
	// 2i: 1 branch of 2 cones in 8 dimensions
	// half-apertures within [0, π]: true
	// up: 2 branches
	// scores: 20
}

// Compile structures into plans and walk them level by level, as every backend does: a
// level's ops of one operator, from all groups, go to the backend in one call.
func ExampleWalk() {
	var plans []*model.Plan
	for _, name := range []string{"2i", "pin"} {
		s, _ := query.ByName(name)
		p, err := model.Compile(s)
		if err != nil {
			panic(err)
		}
		fmt.Println(name, "steps:", p.NumSteps(), "branches:", len(p.Branches()))
		plans = append(plans, p)
	}
	w := model.NewWalk(plans)
	ops := []model.Operator{model.OpAnchor, model.OpProject, model.OpNegate, model.OpIntersect}
	for level := range w.NumLevels() {
		fmt.Printf("level %d:", level)
		for _, o := range ops {
			for _, op := range w.Ops(level, o) {
				fmt.Printf(" %s(group %d, step %d)", o, op.Group, op.Step)
			}
		}
		fmt.Println()
	}
	// Output:
	// 2i steps: 5 branches: 1
	// pin steps: 7 branches: 1
	// level 0: anchor(group 0, step 0) anchor(group 0, step 2) anchor(group 1, step 0) anchor(group 1, step 3)
	// level 1: project(group 0, step 1) project(group 0, step 3) project(group 1, step 1) project(group 1, step 4)
	// level 2: project(group 1, step 2) negate(group 1, step 5) intersect(group 0, step 4)
	// level 3: intersect(group 1, step 6)
}
