package pipeline

import (
	"fmt"
	"io"
	"time"
)

// progress reports a long loop's rate and ETA on a log (stderr), at most every 2 seconds.
type progress struct {
	w           io.Writer
	what        string
	total, done int
	start, last time.Time
}

func newProgress(w io.Writer, what string, total int) *progress {
	now := time.Now()
	return &progress{w: w, what: what, total: total, start: now, last: now}
}

func (p *progress) add(n int) {
	p.done += n
	if p.w == nil || time.Since(p.last) < 2*time.Second {
		return
	}
	p.last = time.Now()
	rate := float64(p.done) / time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "%s: %d/%d queries, %.0f/s, ETA %.0fs\n", p.what, p.done, p.total, rate, float64(p.total-p.done)/rate)
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	el := time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "%s: %d queries in %.1fs (%.0f/s)\n", p.what, p.done, el, float64(p.done)/el)
}
