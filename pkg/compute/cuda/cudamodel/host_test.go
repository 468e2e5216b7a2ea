//go:build cgo

package cudamodel

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// nullDriver executes nothing: it hands out addresses and accepts launches, so that a
// benchmark measures the host's share of an update alone (what must overlap the GPU's).
type nullDriver struct {
	next     atomic.Uint64
	launches atomic.Int64
}

func (n *nullDriver) Name() string { return "null" }
func (n *nullDriver) Alloc(bytes int) (uint64, error) {
	return n.next.Add(uint64(bytes+4096)&^4095) + 1<<40, nil
}
func (n *nullDriver) Free(uint64) error                        { return nil }
func (n *nullDriver) CopyIn(uint64, unsafe.Pointer, int) error { return nil }
func (n *nullDriver) CopyOut(dst unsafe.Pointer, _ uint64, b int) error {
	clear(unsafe.Slice((*byte)(dst), b))
	return nil
}
func (n *nullDriver) Copy(uint64, uint64, int) error { return nil }
func (n *nullDriver) Zero(uint64, int) error         { return nil }
func (n *nullDriver) Launch(string, [3]int, [3]int, []uint64) error {
	n.launches.Add(1)
	return nil
}
func (n *nullDriver) Sync() error  { return nil }
func (n *nullDriver) Close() error { return nil }

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
	cfg := model.Config{Variant: model.RoConE, NumEntities: 14505, NumRelations: 474, Dim: 1600, Gamma: 30, CenterReg: 0.1, Drop: dropRate}
	host, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		b.Fatal(err)
	}
	null := &nullDriver{}
	dev := cuda.NewDevice(null)
	m, err := New(dev, host, 5e-5)
	if err != nil {
		b.Fatal(err)
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
	drop := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	start := null.launches.Load()
	for i := 0; i < b.N; i++ {
		p, err := m.Update(batch, drop)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(null.launches.Load()-start)/float64(b.N), "launches/op")
}
