package model

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// TestVariantsProjections: every variant maps to an operator of compute.Projections (so
// both backends know it), every rotation is some variant's, and an unknown variant is an
// error, not a default.
func TestVariantsProjections(t *testing.T) {
	used := map[compute.Projection]bool{}
	for _, v := range Variants {
		p, err := v.Projection()
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if _, err := p.Info(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		used[p] = true
	}
	for _, info := range compute.Projections {
		if !used[info.Projection] {
			t.Errorf("projection %s is no variant's", info.Name)
		}
	}
	if _, err := Variant("rocone-x").Projection(); err == nil {
		t.Error("an unknown variant has a projection")
	}
	if _, err := compute.Projection(99).Info(); err == nil {
		t.Error("an unknown projection has an entry")
	}
}
