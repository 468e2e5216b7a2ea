package gpu

import (
	"fmt"
	"os"
	"slices"
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
	// GemmWarps: the cost model (gemmCost) without its scale for the warps an SM holds,
	// which makes it split K over 128×128 tiles where it took lone 64×64 blocks.
	GemmWarps bool
}

// revertName is one revert: its name in RevertEnv, its flag in Reverts, and what it
// turns back.
type revertName struct {
	name string
	flag func(*Reverts) *bool
	what string
}

// revertNames are the names ParseReverts takes, in String's order.
var revertNames = []revertName{
	{"gemm-cost", func(r *Reverts) *bool { return &r.GemmCost }, "the GEMMs' tile and split by the waves rule, not the cost model"},
	{"etab", func(r *Reverts) *bool { return &r.EntityTable }, "the candidate distances without the entity half-angle table"},
	{"stacked", func(r *Reverts) *bool { return &r.Stacked }, "the intersection's W1 and W3 as two layers"},
	{"gemm-warps", func(r *Reverts) *bool { return &r.GemmWarps }, "the GEMM cost model without the warps an SM holds"},
}

// RevertsFromEnv is ParseReverts of RevertEnv's value, its error naming the variable:
// what a stage that opens a device, and a benchmark that counts like one, turn back.
func RevertsFromEnv() (Reverts, error) {
	r, err := ParseReverts(os.Getenv(RevertEnv))
	if err != nil {
		return Reverts{}, fmt.Errorf("$%s: %w", RevertEnv, err)
	}
	return r, nil
}

// ParseReverts reads a comma-separated list of the names gemm-cost, etab, stacked and
// gemm-warps (see Reverts); the empty string reverts nothing.
func ParseReverts(s string) (Reverts, error) {
	var r Reverts
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		i := slices.IndexFunc(revertNames, func(n revertName) bool { return n.name == f })
		if i < 0 {
			return Reverts{}, fmt.Errorf("%q: no revert %q: want a comma-separated list of %s", s, f, strings.Join(r.list(true, revertName.label), ", "))
		}
		p := revertNames[i].flag(&r)
		if *p {
			return Reverts{}, fmt.Errorf("%q: %s is named twice", s, f)
		}
		*p = true
	}
	return r, nil
}

// list is label of each revert set in r (of every revert, with all), in revertNames'
// order.
func (r Reverts) list(all bool, label func(revertName) string) []string {
	var out []string
	for _, n := range revertNames {
		if all || *n.flag(&r) {
			out = append(out, label(n))
		}
	}
	return out
}

func (n revertName) label() string    { return n.name }
func (n revertName) describe() string { return n.name + " (" + n.what + ")" }

// String lists the reverts by name, comma-separated, as ParseReverts reads them.
func (r Reverts) String() string { return strings.Join(r.list(false, revertName.label), ",") }

// Describe says what each revert turns back, for the stages' stderr.
func (r Reverts) Describe() string { return strings.Join(r.list(false, revertName.describe), "; ") }

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
