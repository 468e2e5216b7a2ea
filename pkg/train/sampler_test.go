package train

import (
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/model"
)

// TestSamplerMatchesPool checks that a sampler's batches are the pool's own, batch by
// batch across epochs (a last short batch included), whatever the loop holds at once,
// that take leaves the pool where sampling in the loop would, and that a sampler started
// from a restored cursor goes on with the same batches.
func TestSamplerMatchesPool(t *testing.T) {
	_, ts, members := testTrainSet(t)
	const size, k, seed = 7, 5, 11
	for pi, name := range []string{PoolPath, PoolOther} {
		want := newPool(name, pi, members[pi], seed)
		got := newPool(name, pi, members[pi], seed)
		n := 3*len(members[pi])/size + 2 // three epochs and more
		s := startSampler(got, ts, size, k)
		var held []*model.Batch
		for i := range n {
			w := want.next(ts, size, k)
			b := s.take()
			if !sameBatch(b, w) {
				t.Fatalf("%s pool, batch %d: the sampler's differs from the pool's", name, i)
			}
			if got.state().Epoch != want.state().Epoch || got.state().Pos != want.state().Pos ||
				!slices.Equal(got.state().RNG, want.state().RNG) {
				t.Fatalf("%s pool, batch %d: cursor %+v after take, %+v sampling in place", name, i, got.state(), want.state())
			}
			held = append(held, b)
			if i%5 == 4 { // the loop's most: four held at once, then released
				for _, h := range held[:len(held)-1] {
					s.release(h)
				}
				held = held[len(held)-1:]
			}
			if i == n/2 {
				// Stop and resume from the pool's cursor, as a checkpoint would.
				s.close()
				restored := newPool(name, pi, members[pi], seed)
				if err := restored.restore(got.state()); err != nil {
					t.Fatal(err)
				}
				got = restored
				s = startSampler(got, ts, size, k)
				held = nil
			}
		}
		s.close()
	}
}

func sameBatch(a, b *model.Batch) bool {
	if a.NumNegative != b.NumNegative || len(a.Queries) != len(b.Queries) ||
		!slices.Equal(a.Positive, b.Positive) || !slices.Equal(a.Negative, b.Negative) || !slices.Equal(a.Weight, b.Weight) {
		return false
	}
	for i := range a.Queries {
		if a.Queries[i].String() != b.Queries[i].String() {
			return false
		}
	}
	return true
}

// next samples the pool's next batch in place, as the sampler's goroutine does (the
// tests' way to read a pool's batches in order).
func (p *pool) next(ts *trainSet, size, k int) *model.Batch {
	b := new(model.Batch)
	p.fill(ts, size, k, b)
	return b
}
