//go:build cgo

package gpumodel

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// BenchmarkHostShare is the host's work per update at the FB15k-237 paper configuration
// (d=1600, b=512, n=128, dropout 0.1; a batch of the "other" pool's structures, which
// have the intersections and so the dropout masks): grouping, index arrays, CSR indices,
// masks, and enqueueing every launch. On a GPU it overlaps the device's previous update.
func BenchmarkHostShare(b *testing.B) {
	for _, drop := range []float64{0.1, 0} { // the masks are the largest part
		b.Run(map[bool]string{true: "dropout", false: "no-dropout"}[drop > 0], func(b *testing.B) { benchmarkHostShare(b, drop) })
	}
}

func benchmarkHostShare(b *testing.B, dropRate float64) {
	null := &gputest.NullDriver{}
	m, batch := hostShareModel(b, null, 1600, dropRate)
	drop := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	start, startZ := null.Launches(), null.Memsets()
	for i := 0; i < b.N; i++ {
		p, err := m.Update(batch, drop)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(null.Launches()-start)/float64(b.N), "launches/op")
	b.ReportMetric(float64(null.Memsets()-startZ)/float64(b.N), "memsets/op")
}

// BenchmarkStepCounts counts one training step's device work at the FB15k-237 paper
// configuration (d=1600, b=513, n=128, dropout 0.1; train's order of updates: paths,
// the trained structures with intersections and negations, paths) on a driver that runs
// nothing: its launches, and the bytes its kernels state they move (gpu.Work), in all,
// of Adam and of the arena's memsets; and apart, its copies from and to the host (the
// updates' index arrays and Adam's programs up, the losses down); with -v, the launches
// of each kernel. Counts, not times: the same on any machine, and what a device
// profile's launches/step and MB/step columns show for batches of these shapes on a
// device of 132 SMs (the GEMMs' tiles and splits follow the layers' rows). Like a stage,
// it turns back the choices ROCONE_GPU_REVERT names (gpu.RevertEnv), so both sides of
// an A/B are counted here.
func BenchmarkStepCounts(b *testing.B) {
	null := &gputest.NullDriver{}
	m, _ := hostShareModel(b, null, 1600, 0.1)
	rng := rand.New(rand.NewPCG(5, 6))
	pool := func(names ...string) *model.Batch {
		var structures []*query.Structure
		for _, name := range names {
			for _, ty := range query.Types {
				if ty.Name == name {
					structures = append(structures, query.MustParse(ty.Notation))
				}
			}
		}
		return model.RandomBatch(rng, m.cfg, structures, 513/len(structures), 128)
	}
	paths := pool("1p", "2p", "3p")
	other := pool("2i", "3i", "ip", "pi", "2in", "3in", "inp", "pin", "pni")
	drop := rand.New(rand.NewPCG(3, 4))
	step := func() {
		for _, batch := range []*model.Batch{paths, other, paths} {
			p, err := m.Update(batch, drop)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, _, err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
	step() // the arena grows, the angle tables are mapped
	step()
	prof := gpu.NewProfiler(m.dev, false)
	m.dev.Profile(prof)
	b.ResetTimer()
	for range b.N {
		step()
	}
	b.StopTimer()
	m.dev.Profile(nil)
	recs, err := prof.Records()
	if err != nil {
		b.Fatal(err)
	}
	var all, adam, memset, host int64
	launches, copies := 0, 0
	perKernel := map[string]int{}
	for _, r := range recs {
		if r.HostCopy() { // not the kernels' traffic
			host += r.Work.Bytes
			copies++
			continue
		}
		launches++
		perKernel[r.Kernel]++
		all += r.Work.Bytes
		switch {
		case strings.HasPrefix(r.Kernel, "adam"):
			adam += r.Work.Bytes
		case r.Kernel == "memset":
			memset += r.Work.Bytes
		}
	}
	for _, k := range slices.Sorted(maps.Keys(perKernel)) {
		b.Logf("%-28s %6.1f launches/step", k, float64(perKernel[k])/float64(b.N))
	}
	perStep := func(x int64) float64 { return float64(x) / float64(b.N) / 1e6 }
	b.ReportMetric(float64(launches)/float64(b.N), "launches/step")
	b.ReportMetric(perStep(all), "MB/step")
	b.ReportMetric(perStep(adam), "adam-MB/step")
	b.ReportMetric(perStep(memset), "memset-MB/step")
	b.ReportMetric(perStep(host), "host-copy-MB/step")
	b.ReportMetric(float64(copies)/float64(b.N), "host-copies/step")
}

// TestUpdateDoesNotWait checks that enqueueing an update never waits for the device
// (no synchronous copy, Sync or Free once the arena has grown): its index arrays go up
// with AsyncCopier, so the host enqueues the next update while the device runs the last,
// and only reading a loss waits, for that update's own download (AsyncDownloader), never
// for the whole queue: the train loop reads a step's losses after enqueueing the next
// step, which a drain would leave the device without.
func TestUpdateDoesNotWait(t *testing.T) {
	null := &gputest.NullDriver{}
	m, batch := hostShareModel(t, null, 32, 0.1)
	drop := rand.New(rand.NewPCG(3, 4))
	for range 2 { // the first overflows the arena, the second's Reset frees that and grows it
		if _, err := m.Update(batch, drop); err != nil {
			t.Fatal(err)
		}
	}
	waits, async := null.Waits(), null.AsyncCopies()
	var pend []Pending
	for range 3 {
		p, err := m.Update(batch, drop)
		if err != nil {
			t.Fatal(err)
		}
		pend = append(pend, p)
	}
	if w := null.Waits() - waits; w != 0 {
		t.Errorf("three updates waited for the device %d times", w)
	}
	if a := null.AsyncCopies() - async; a == 0 {
		t.Errorf("three updates made no asynchronous upload")
	}
	drains := null.Drains()
	for _, p := range pend {
		if _, _, _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if null.Waits() == waits {
		t.Errorf("reading the losses did not wait for the device")
	}
	if d := null.Drains() - drains; d != 0 {
		t.Errorf("reading three losses waited %d times for everything enqueued", d)
	}
}

// hostShareModel is a RoConE model at FB15k-237's sizes (dimension dim) on a device over
// drv, and a batch of 512 queries of the "other" pool's structures (those with
// intersections, and so dropout masks) with 128 negatives each.
func hostShareModel(tb testing.TB, drv gpu.Driver, dim int, dropRate float64) (*Model, *model.Batch) {
	cfg := model.Config{Variant: model.RoConE, NumEntities: 14505, NumRelations: 474, Dim: dim, Gamma: 30, CenterReg: 0.1, Drop: dropRate}
	host, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		tb.Fatal(err)
	}
	dev := gpu.NewDevice(drv)
	// The counting benchmarks count either side of an A/B as a stage runs it.
	reverts, err := gpu.RevertsFromEnv()
	if err != nil {
		tb.Fatal(err)
	}
	dev.SetReverts(reverts)
	m, err := New(dev, host, 5e-5)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var structures []*query.Structure
	for _, ty := range query.Types {
		if ty.Name != "1p" && ty.Name != "2p" && ty.Name != "3p" {
			structures = append(structures, query.MustParse(ty.Notation))
		}
	}
	batch := &model.Batch{NumNegative: 128}
	for q := 0; q < 512; q++ {
		s := structures[q%len(structures)]
		g := query.Grounded{Structure: s}
		for a := 0; a < s.NumAnchors; a++ {
			g.Anchors = append(g.Anchors, int32(rng.IntN(cfg.NumEntities)))
		}
		for r := 0; r < s.NumRelations; r++ {
			g.Relations = append(g.Relations, int32(rng.IntN(cfg.NumRelations)))
		}
		batch.Queries = append(batch.Queries, g)
		batch.Positive = append(batch.Positive, int32(rng.IntN(cfg.NumEntities)))
		for j := 0; j < 128; j++ {
			batch.Negative = append(batch.Negative, int32(rng.IntN(cfg.NumEntities)))
		}
		batch.Weight = append(batch.Weight, 0.2)
	}
	return m, batch
}
