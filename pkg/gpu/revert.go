package gpu

import (
	"fmt"
	"strings"
)

// RevertEnv names the environment variable that turns a device's newest, not yet measured
// choices back to the ones they replaced (ParseReverts), one by one, so that one device
// run can time the whole training step both ways (scripts/cuda/bench.sh's A/B rows),
// where the kernel bench times the kernels alone and misses what a choice costs elsewhere
// (the entity table's bytes in Adam, for one). A stage that opens a CUDA device reads it
// (package device) and says on stderr what it turned back. Every revert gives a model the
// CPU's results within the parity tolerance, and two runs with the same reverts the same
// bits; between settings the last bits may differ (another order of a GEMM's sums).
const RevertEnv = "ROCONE_GPU_REVERT"

// Reverts are the choices turned back (RevertEnv). The zero value keeps every default.
type Reverts struct {
	// GemmCost: the GEMMs' tile and split by the waves rule (policyWaves), the default
	// before the cost model (gemmCost).
	GemmCost bool
	// EntityTable: the training step's candidate distances, forward and backward,
	// compute each pair's entity half-angle sines (DistanceForward, DistanceBackward),
	// and Adam writes no table of them (AngleGrad.SinCos), as before the table.
	EntityTable bool
	// Stacked: the intersection's first attention and DeepSets layers (W1, W3) allocated
	// apart, and so run as two layers of d outputs, not one of 2d (IntersectWeights).
	Stacked bool
}

// revertNames are the names ParseReverts takes, in String's order.
var revertNames = []struct {
	name string
	flag func(*Reverts) *bool
	what string
}{
	{"gemm-cost", func(r *Reverts) *bool { return &r.GemmCost }, "the GEMMs' tile and split by the waves rule, not the cost model"},
	{"etab", func(r *Reverts) *bool { return &r.EntityTable }, "the candidate distances without the entity half-angle table"},
	{"stacked", func(r *Reverts) *bool { return &r.Stacked }, "the intersection's W1 and W3 as two layers"},
}

// ParseReverts reads a comma-separated list of the names gemm-cost, etab and stacked (see
// Reverts); the empty string reverts nothing.
func ParseReverts(s string) (Reverts, error) {
	var r Reverts
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		found := false
		for _, n := range revertNames {
			if n.name == f {
				if p := n.flag(&r); *p {
					return Reverts{}, fmt.Errorf("%q: %s is named twice", s, f)
				}
				*n.flag(&r) = true
				found = true
			}
		}
		if !found {
			names := make([]string, len(revertNames))
			for i, n := range revertNames {
				names[i] = n.name
			}
			return Reverts{}, fmt.Errorf("%q: no revert %q: want a comma-separated list of %s", s, f, strings.Join(names, ", "))
		}
	}
	return r, nil
}

// String lists the reverts by name, comma-separated, as ParseReverts reads them.
func (r Reverts) String() string {
	var names []string
	for _, n := range revertNames {
		if *n.flag(&r) {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// Describe says what each revert turns back, for the stages' stderr.
func (r Reverts) Describe() string {
	var parts []string
	for _, n := range revertNames {
		if *n.flag(&r) {
			parts = append(parts, n.name+" ("+n.what+")")
		}
	}
	return strings.Join(parts, "; ")
}

// SetReverts turns the device's choices in r back (Reverts); the operators enqueued after
// it follow them. Set it before building a model on the device: the stacked layout is
// chosen when a model is allocated.
func (d *Device) SetReverts(r Reverts) {
	d.reverts = r
	d.gemmPolicy = policyCost
	if r.GemmCost {
		d.gemmPolicy = policyWaves
	}
}

// Reverts returns the choices SetReverts turned back.
func (d *Device) Reverts() Reverts { return d.reverts }
