//go:build cgo

package gpumodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// The device step against the CPU model: the same batch (every named structure and two
// custom ones, repeated ids included), the same dropout masks; the loss and every
// parameter's gradient agree to float32 rounding. On the emulator here; gpu_test.go runs
// the same check on a real device.

// d=8 stacks the intersection's first layers (gpu.IntersectWeights), d=6 cannot.
func TestEmulatorMatchesCPU(t *testing.T) {
	for _, v := range model.Variants {
		for _, dim := range []int{8, 6} {
			t.Run(fmt.Sprintf("%s/d=%d", v, dim), func(t *testing.T) { checkStepMatchesCPU(t, gputest.Emulator(t), v, dim) })
		}
	}
}

// TestEmulatorMatchesCPUReversed is TestEmulatorMatchesCPU (at d=8) with each block's
// threads run last to first between barriers: every kernel of a training update, in the
// order the step launches them, gives the CPU's loss and gradients in both orders.
func TestEmulatorMatchesCPUReversed(t *testing.T) {
	for _, v := range model.Variants {
		t.Run(fmt.Sprint(v), func(t *testing.T) { checkStepMatchesCPU(t, gputest.EmulatorReversed(t), v, 8) })
	}
}

// TestReverts: with each of gpu.Reverts turned back, a step is still the CPU's, and the
// model takes the path it names: the candidate distances from the angles with no entity
// table (EntityTable), the intersection's W1 and W3 apart (Stacked, which
// checkStepMatchesCPU asserts); by default, the table and its forward and backward.
func TestReverts(t *testing.T) {
	for _, r := range []gpu.Reverts{{}, {EntityTable: true}, {Stacked: true}} {
		t.Run("reverts="+r.String(), func(t *testing.T) {
			dev := gputest.Emulator(t)
			dev.SetReverts(r)
			checkStepMatchesCPU(t, dev, model.RoConE, 8)

			cfg := testConfig(model.RoConE, 8)
			rng := rand.New(rand.NewPCG(3, 4))
			dm, err := New(dev, spreadModel(t, cfg, rng), 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			defer dm.Close()
			n := updateLaunches(t, dev, dm, randomBatch(rng, cfg, 1, 3))
			table := !r.EntityTable
			if (dm.entSC != nil) != table {
				t.Errorf("entity table %v, want %v", dm.entSC != nil, table)
			}
			for _, k := range []string{"distance_fwd", "distance_bwd_q"} {
				if (n[k+"_etab"] > 0) != table || (n[k+"_tab"] > 0) == table {
					t.Errorf("%s_etab %d launches, %s_tab %d; want the table's: %v", k, n[k+"_etab"], k, n[k+"_tab"], table)
				}
			}
		})
	}
}

var customStructures = []string{
	"(((('e',('r',)),('e',('r','n'))),('r','n')),('e',('r','r')),('e',('n','r')))",
	"((('e',('r',)),('e',('r',)),('u',)),(('e',('r',)),('e',('r','n')),('u',)))",
}

func allStructures() []*query.Structure {
	var out []*query.Structure
	for _, ty := range query.Types {
		out = append(out, query.MustParse(ty.Notation))
	}
	for _, n := range customStructures {
		out = append(out, query.MustParse(n))
	}
	return out
}

func testConfig(v model.Variant, dim int) model.Config {
	return model.Config{Variant: v, NumEntities: 40, NumRelations: 7, Dim: dim, Gamma: 2, CenterReg: 0.3,
		Drop: 0.3, ConeHidden: 24, Seed: 5}
}

// spreadModel is a CPU model whose tables are spread so that angles reach ±π and
// rotated apertures cross 0 and π.
func spreadModel(t *testing.T, cfg model.Config, rng *rand.Rand) *model.Model[float32] {
	t.Helper()
	host, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	R := cfg.EmbeddingRange()
	for _, tab := range [][]float32{host.Params.Entity, host.Params.RelAxis, host.Params.RelAperture} {
		for i := range tab {
			tab[i] = float32((2*rng.Float64() - 1) * 2 * R)
		}
	}
	for i := range host.Params.RelShift {
		host.Params.RelShift[i] = float32(2*rng.Float64() - 1)
	}
	return host
}

func checkStepMatchesCPU(t *testing.T, dev *gpu.Device, v model.Variant, dim int) {
	cfg := testConfig(v, dim)
	rng := rand.New(rand.NewPCG(1, 2))
	host := spreadModel(t, cfg, rng)
	batch := randomBatch(rng, cfg, 3, 5)

	// CPU.
	tape, err := host.Loss(batch, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	grads := host.NewGrads()
	tape.Backward(grads)

	// Device.
	dm, err := New(dev, host, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	// Where the bias halves keep 16-byte alignment, the first intersection layers are one
	// (unless that is reverted: gpu.Reverts.Stacked).
	if stack := dim%4 == 0 && !dev.Reverts().Stacked; dm.p.inter.Stacked() != stack || dm.g.inter.Stacked() != stack {
		t.Errorf("d=%d: the intersection's W1 and W3 stacked: %v (gradients %v), want %v", dim, dm.p.inter.Stacked(), dm.g.inter.Stacked(), stack)
	}
	dm.keepGrads = true
	p, err := dm.Update(batch, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	loss, lossPos, lossNeg, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"loss", loss, tape.Loss}, {"positive loss", lossPos, tape.PositiveLoss}, {"negative loss", lossNeg, tape.NegativeLoss}} {
		if !(math.Abs(c.got-c.want) <= 1e-5*math.Abs(c.want)) {
			t.Errorf("%s: device %.9g, CPU %.9g", c.name, c.got, c.want)
		}
	}
	for i, ten := range grads.Params.Tensors() {
		got, err := dm.grads[i].ToHost()
		if err != nil {
			t.Fatal(err)
		}
		scale := 0.0
		for _, x := range ten.Data {
			scale = math.Max(scale, math.Abs(float64(x)))
		}
		// The attention's second bias shifts every branch's logit alike, so the softmax
		// cancels its gradient to rounding noise; every other gradient must be exercised.
		if scale < 1e-6 && ten.Name != "intersection.b2" {
			t.Errorf("%s: the CPU gradient is %g; the test does not exercise it", ten.Name, scale)
			continue
		}
		scale = math.Max(scale, 1e-5)
		worst, at := 0.0, 0
		for j, want := range ten.Data {
			if d := math.Abs(float64(got[j] - want)); d > worst || math.IsNaN(float64(got[j])) {
				worst, at = d, j
			}
		}
		if worst > 1e-4*scale || math.IsNaN(worst) {
			t.Errorf("%s[%d]: device %.9g, CPU %.9g (|Δ| %.3g, scale %.3g)", ten.Name, at, got[at], ten.Data[at], worst, scale)
		}
	}
}

// randomBatch draws rounds × one query of every structure (model.RandomBatch, round by
// round), so that the structures interleave in the batch.
func randomBatch(rng *rand.Rand, cfg model.Config, rounds, k int) *model.Batch {
	b := &model.Batch{NumNegative: k}
	for i := 0; i < rounds; i++ {
		r := model.RandomBatch(rng, cfg, allStructures(), 1, k)
		b.Queries = append(b.Queries, r.Queries...)
		b.Positive = append(b.Positive, r.Positive...)
		b.Negative = append(b.Negative, r.Negative...)
		b.Weight = append(b.Weight, r.Weight...)
	}
	return b
}

// structureNamed is the named query structure (query.Types).
func structureNamed(t *testing.T, name string) *query.Structure {
	t.Helper()
	for _, ty := range query.Types {
		if ty.Name == name {
			return query.MustParse(ty.Notation)
		}
	}
	t.Fatalf("no query type %s", name)
	return nil
}

// updateLaunches runs one update of dm on batch, waits for it, and returns how many times
// it launched each kernel.
func updateLaunches(t *testing.T, dev *gpu.Device, dm *Model, batch *model.Batch) map[string]int {
	t.Helper()
	prof := gpu.NewProfiler(dev, false)
	dev.Profile(prof)
	p, err := dm.Update(batch, rand.New(rand.NewPCG(9, 9)))
	if err == nil {
		_, _, _, err = p.Wait()
	}
	dev.Profile(nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := prof.Records()
	if err != nil {
		t.Fatal(err)
	}
	return gpu.Launches(recs)
}

// launchesWithPrefix sums n's counts of the kernels whose names start with prefix.
func launchesWithPrefix(n map[string]int, prefix string) int {
	sum := 0
	for k, c := range n {
		if strings.HasPrefix(k, prefix) {
			sum += c
		}
	}
	return sum
}

// TestRelationRowsOneLaunch: an update gathers every level's relation rows in one launch
// and sums their gradients in one, so a 3p batch takes only its two more levels' staging
// (a gather and a row sum each) more than a 1p batch, for every variant (rocone-se gathers
// its shifts too, in one launch more either way).
func TestRelationRowsOneLaunch(t *testing.T) {
	dev := gputest.Emulator(t)
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) {
			cfg := testConfig(v, 8)
			counts := map[string]map[string]int{}
			for _, name := range []string{"1p", "3p"} {
				rng := rand.New(rand.NewPCG(1, 2))
				host := spreadModel(t, cfg, rng)
				batch := model.RandomBatch(rng, cfg, []*query.Structure{structureNamed(t, name)}, 6, 3)
				dm, err := New(dev, host, 1e-3)
				if err != nil {
					t.Fatal(err)
				}
				n := updateLaunches(t, dev, dm, batch)
				counts[name] = map[string]int{"gather": launchesWithPrefix(n, "gather_rows"), "rows_sum": launchesWithPrefix(n, "rows_sum_csr")}
				dm.Close()
			}
			for _, k := range []string{"gather", "rows_sum"} {
				if d := counts["3p"][k] - counts["1p"][k]; d != 2 {
					t.Errorf("%s launches: 1p %d, 3p %d; want 2 more (the staging of two more levels)", k, counts["1p"][k], counts["3p"][k])
				}
			}
		})
	}
}

// TestIntersectionStepsWait: the intersection's weights' Adam steps wait
// (gpu.Adam.SetDeferrable), every other tensor stepping: an update with intersections
// leaves its step waiting with its gradient, an update without (gpu.Adam.SetIdle) adds a
// zero-gradient step, and the third is taken with the two in the update's one Adam
// launch; an update with intersections takes what waits before its forward pass (a Flush:
// two Adam launches). That the waiting changes no bit of training is pkg/train's
// TestDeviceTrainingMatchesCPU (with path and other batches in turn).
func TestIntersectionStepsWait(t *testing.T) {
	dev := gputest.Emulator(t)
	cfg := testConfig(model.RoConE, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	host := spreadModel(t, cfg, rng)
	dm, err := New(dev, host, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	update := func(name string) int {
		t.Helper()
		batch := model.RandomBatch(rng, cfg, []*query.Structure{structureNamed(t, name)}, 4, 3)
		return launchesWithPrefix(updateLaunches(t, dev, dm, batch), "adam")
	}
	waiting := func() (inter, other int) {
		for i, name := range dm.names {
			if strings.HasPrefix(name, "intersection.") {
				inter = max(inter, dm.adam.Pending(i))
			} else {
				other = max(other, dm.adam.Pending(i))
			}
		}
		return inter, other
	}
	for _, c := range []struct {
		batch        string
		launches     int
		inter, other int
	}{{"2i", 1, 1, 0}, {"1p", 1, 2, 0}, {"2p", 1, 0, 0}, {"2i", 1, 1, 0}, {"3p", 1, 2, 0}, {"pi", 2, 1, 0}, {"2i", 2, 1, 0}, {"1p", 1, 2, 0}} {
		n := update(c.batch)
		inter, other := waiting()
		if n != c.launches || inter != c.inter || other != c.other {
			t.Errorf("after a %s update: %d Adam launches, %d intersection and %d other steps waiting; want %d, %d, %d",
				c.batch, n, inter, other, c.launches, c.inter, c.other)
		}
	}
}
