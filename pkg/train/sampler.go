package train

import "github.com/rocone/rocone/pkg/model"

// A sampler samples one pool's batches ahead of the step loop, on its own goroutine, so
// that the host's sampling (about 1.5–2 ms a batch at FB15k-237's b=512, n=128: three a
// step) overlaps the updates instead of adding to them. It samples from a clone of the
// pool (pool.clone: its own generator and scratch) the very batches the pool would: a
// pool's batches depend on its cursor alone, so sampling ahead changes no result. The
// pool itself stays where the loop is (take moves it past each batch taken), which is what
// a checkpoint saves.
type sampler struct {
	pool  *pool        // the loop's: moved by take
	ready chan sampled // batches sampled ahead, in order
	free  chan *model.Batch
	stop  chan struct{}
	done  chan struct{}
}

// sampled is a batch and the pool's cursor after it.
type sampled struct {
	batch *model.Batch
	after cursor
}

// samplerAhead is how many batches a sampler keeps ready; samplerBuffers is its batch
// buffers: those ready, the one it fills and the four the loop may hold (a pool is used
// twice a step, and the loop holds two steps' batches while the first's losses are read
// after the second is enqueued; a batch is released when its loss is read). With fewer,
// take would wait for a release that waits for take.
const (
	samplerAhead   = 2
	samplerHeld    = 4
	samplerBuffers = samplerAhead + 1 + samplerHeld
)

// startSampler starts sampling p's batches of size queries and k negatives from p's
// cursor on.
func startSampler(p *pool, ts *trainSet, size, k int) *sampler {
	s := &sampler{pool: p, ready: make(chan sampled, samplerAhead), free: make(chan *model.Batch, samplerBuffers),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range samplerBuffers {
		s.free <- new(model.Batch)
	}
	ahead := p.clone()
	go func() {
		defer close(s.done)
		for {
			var b *model.Batch
			select {
			case b = <-s.free:
			case <-s.stop:
				return
			}
			ahead.fill(ts, size, k, b)
			select {
			case s.ready <- sampled{b, ahead.cursor()}:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// take returns the pool's next batch and moves the pool past it. The batch is the
// caller's until it hands it back with release.
func (s *sampler) take() *model.Batch {
	b := <-s.ready
	s.pool.seek(b.after)
	return b.batch
}

// release hands a batch from take back for reuse.
func (s *sampler) release(b *model.Batch) { s.free <- b }

// close stops the goroutine and waits for it to end.
func (s *sampler) close() {
	close(s.stop)
	<-s.done
}
