package train

import (
	"sync"
	"sync/atomic"
)

// prefault writes one float32 per 4 KiB page of each buffer, on up to workers goroutines,
// so that the operating system maps the buffers' memory now, at start-up, instead of at
// the first update that writes each page.
//
// Why: the gradient tables and Adam's moments are allocated zero and untouched, and the
// kernel maps a page at its first write. Dense Adam writes every page at its first update;
// sparse Adam and the gradient scatter write only the pages of the rows a batch touches,
// so on a large graph every update keeps mapping fresh memory (at 1.5M entities and d=200,
// a batch's rows span about 60,000 new pages of each of three tables) for dozens of
// updates. Mapping a page costs microseconds on bare metal and tens of microseconds on
// some virtual machines (about 50 µs, 10 s a gigabyte, on the one make bench-scale was run
// on): updates that would take a tenth of a second took seconds. The memory is the same
// either way (the buffers are the run's to use), so mapping it at start-up only moves the
// cost to where it is paid once and keeps an update's time proportional to its batch.
func prefault(workers int, bufs ...[]float32) {
	const page = 1024      // float32s in 4 KiB
	const chunk = 16 << 20 // float32s per task (64 MiB)
	type task struct {
		buf    []float32
		lo, hi int
	}
	var tasks []task
	for _, b := range bufs {
		for lo := 0; lo < len(b); lo += chunk {
			tasks = append(tasks, task{b, lo, min(lo+chunk, len(b))})
		}
	}
	adviseHugePages(false, bufs...) // hugepages_linux.go: before the first write
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < max(1, min(workers, len(tasks))); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1) - 1); k < len(tasks); k = int(next.Add(1) - 1) {
				t := tasks[k]
				for i := t.lo; i < t.hi; i += page {
					t.buf[i] = 0 // the buffers are zero when this runs
				}
			}
		}()
	}
	wg.Wait()
}
