package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/query"
)

// recorder is an Executor that writes down what the walk asks of it.
type recorder struct{ calls []string }

func (r *recorder) note(name string, level int, ops []Op) error {
	var parts []string
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("g%d.s%d", op.Group, op.Step))
	}
	r.calls = append(r.calls, fmt.Sprintf("%s@%d[%s]", name, level, strings.Join(parts, " ")))
	return nil
}

func (r *recorder) Anchor(l int, ops []Op) error            { return r.note("anchor", l, ops) }
func (r *recorder) Project(l int, ops []Op) error           { return r.note("project", l, ops) }
func (r *recorder) Negate(l int, ops []Op) error            { return r.note("negate", l, ops) }
func (r *recorder) Intersect(l int, ops []Op) error         { return r.note("intersect", l, ops) }
func (r *recorder) AnchorBackward(l int, ops []Op) error    { return r.note("anchor'", l, ops) }
func (r *recorder) ProjectBackward(l int, ops []Op) error   { return r.note("project'", l, ops) }
func (r *recorder) NegateBackward(l int, ops []Op) error    { return r.note("negate'", l, ops) }
func (r *recorder) IntersectBackward(l int, ops []Op) error { return r.note("intersect'", l, ops) }
func (r *recorder) Head() error                             { r.calls = append(r.calls, "head"); return nil }
func (r *recorder) HeadBackward() error                     { r.calls = append(r.calls, "head'"); return nil }

// TestWalkOrder: the walk batches every group's steps of one level and operator into one
// call, forward by increasing level and backward by decreasing level with each group's
// steps reversed, the head last forward and first backward.
func TestWalkOrder(t *testing.T) {
	plan := func(name string) *Plan {
		t.Helper()
		s, err := query.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 2i: anchor, project, anchor, project, intersect. inp: anchor, project, anchor,
	// project, negate, intersect, project.
	w := NewWalk([]*Plan{plan("2i"), plan("inp")})
	if w.NumLevels() != 5 {
		t.Fatalf("%d levels, want 5", w.NumLevels())
	}
	r := &recorder{}
	if err := w.Forward(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Backward(r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"anchor@0[g0.s0 g0.s2 g1.s0 g1.s2]",
		"project@1[g0.s1 g0.s3 g1.s1 g1.s3]",
		"negate@2[g1.s4]", "intersect@2[g0.s4]", // anchor, project, negate, intersect
		"intersect@3[g1.s5]",
		"project@4[g1.s6]",
		"head",
	}
	want = append(want, "head'",
		"project'@4[g1.s6]",
		"intersect'@3[g1.s5]",
		"intersect'@2[g0.s4]", "negate'@2[g1.s4]", // the reverse order
		"project'@1[g0.s3 g0.s1 g1.s3 g1.s1]",
		"anchor'@0[g0.s2 g0.s0 g1.s2 g1.s0]",
	)
	if got := strings.Join(r.calls, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestProjectionRefusesUnknownVariant: the variant → operator mapping has no default.
func TestProjectionRefusesUnknownVariant(t *testing.T) {
	for _, v := range Variants {
		if _, err := v.Projection(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	if p, err := Variant("rocone-new").Projection(); err == nil {
		t.Errorf("an unknown variant mapped to projection %d", p)
	}
}
