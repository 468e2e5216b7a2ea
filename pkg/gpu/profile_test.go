//go:build cgo

package gpu

import (
	"math"
	"testing"
	"time"
)

// TestWorkHandChecked profiles a few launches on the emulator and compares the work
// their launch sites state with values counted by hand.
func TestWorkHandChecked(t *testing.T) {
	d := emuDevice(t, nil)
	up := func(n int) *F32 {
		b, err := FromHost(d, make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ids := func(v ...int32) *I32 {
		b, err := FromHost(d, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Buffers first: their allocation clears them (memsets), outside the profile.
	x, w, b, y := up(3*5), up(4*5), up(4), up(3*4)
	dst, src := up(10), up(10)
	table, out4, out10 := up(6*3), up(4*3), up(10*3)
	idx4, idx10 := ids(5, 0, 2, 1), ids(0, 1, 2, 3, 4, 5, 0, 1, 2, 3)

	p := NewProfiler(d, true)
	if !p.Timed() {
		t.Fatal("the emulator's profiler is untimed")
	}
	d.Profile(p)
	steps := []struct {
		name string
		run  func() error
		want Work
	}{
		// y [3][4] = x [3][5] · wᵀ + b: 2·M·N·K = 2·3·4·5 FLOPs; x, w, b read, y written.
		{"gemm_nt", func() error { return d.LinearForward(y, x, w, b, 3, 5, 4) }, Work{Bytes: 4 * (15 + 20 + 4 + 12), FLOPs: 120}},
		// dst += src over 10: dst read and written, src read; an add each.
		{"add_f32", func() error { return d.Add(dst, src) }, Work{Bytes: 4 * 30, FLOPs: 10}},
		// 4 distinct rows of width 3 from a 6-row table: the index, 4 rows, 4 rows out.
		{"gather_rows", func() error { return d.GatherRows(out4, table, idx4, 3) }, Work{Bytes: 4 * (4 + 12 + 12)}},
		// 10 gathers from a 6-row table: at most the 6 rows are read.
		{"gather_rows", func() error { return d.GatherRows(out10, table, idx10, 3) }, Work{Bytes: 4 * (10 + 18 + 30)}},
		// A clear of the 10-float dst.
		{"memset", func() error { return dst.Zero() }, Work{Bytes: 40}},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	d.Profile(nil)
	recs, err := p.Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(steps) {
		t.Fatalf("%d records for %d launches: %+v", len(recs), len(steps), recs)
	}
	for i, s := range steps {
		r := recs[i]
		if r.Kernel != s.name || r.Work != s.want {
			t.Errorf("launch %d: %s %+v, want %s %+v", i, r.Kernel, r.Work, s.name, s.want)
		}
		if math.IsNaN(r.Seconds) || r.Seconds < 0 {
			t.Errorf("launch %d (%s): %v seconds", i, r.Kernel, r.Seconds)
		}
	}
	// Detached, nothing more is recorded; the marks were released.
	if err := d.Add(dst, src); err != nil {
		t.Fatal(err)
	}
	if recs, _ := p.Records(); len(recs) != len(steps) {
		t.Errorf("%d records after detaching, want %d", len(recs), len(steps))
	}
}

// TestCheckWork: a record without bytes, or with negative FLOPs, is an error naming it.
func TestCheckWork(t *testing.T) {
	for _, c := range []struct {
		recs []Record
		bad  bool
	}{
		{[]Record{{Kernel: "a", Work: Work{Bytes: 4}}, {Kernel: "b", Work: Work{Bytes: 8, FLOPs: 2}}}, false},
		{[]Record{{Kernel: "a", Work: Work{Bytes: 4}}, {Kernel: "b"}}, true},
		{[]Record{{Kernel: "b", Work: Work{Bytes: 4, FLOPs: -1}}}, true},
	} {
		err := CheckWork(c.recs)
		if (err != nil) != c.bad {
			t.Errorf("CheckWork(%+v) = %v", c.recs, err)
		}
	}
}

// TestProfileIdle: a record's Idle is the device's wait for it since the record before,
// here the host's sleep between two launches on the emulator's clock (at least the
// sleep; no upper bound on a shared machine); it is unknown (NaN) for the first record
// after each attach, whatever ran or waited before it, and the copies from and to the
// host are recorded as upload and download.
func TestProfileIdle(t *testing.T) {
	d := emuDevice(t, nil)
	dst, err := FromHost(d, make([]float32, 8))
	if err != nil {
		t.Fatal(err)
	}
	src, err := FromHost(d, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	const sleep = 30 * time.Millisecond
	p := NewProfiler(d, true)
	d.Profile(p)
	run := func(steps ...func() error) {
		for _, s := range steps {
			if err := s(); err != nil {
				t.Fatal(err)
			}
		}
	}
	add := func() error { return d.Add(dst, src) }
	nap := func() error { time.Sleep(sleep); return nil }
	run(add, nap, add, add, func() error { return dst.Upload(make([]float32, 4)) })
	d.Profile(nil)
	run(add, nap) // unprofiled: no record, and no idle time across it
	d.Profile(p)
	run(add, func() error { _, err := dst.DownloadAsync(8); return err })
	d.Profile(nil)
	recs, err := p.Records()
	if err != nil {
		t.Fatal(err)
	}
	kernels := []string{"add_f32", "add_f32", "add_f32", "upload", "add_f32", "download"}
	if len(recs) != len(kernels) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(kernels), recs)
	}
	for i, r := range recs {
		if r.Kernel != kernels[i] {
			t.Errorf("record %d: %s, want %s", i, r.Kernel, kernels[i])
		}
		first := i == 0 || i == 4 // the first of each attach
		if math.IsNaN(r.Idle) != first || (!first && r.Idle < 0) {
			t.Errorf("record %d (%s): idle %v; want NaN: %v", i, r.Kernel, r.Idle, first)
		}
	}
	if recs[1].Idle < sleep.Seconds() {
		t.Errorf("idle before the launch after a %v sleep: %v s", sleep, recs[1].Idle)
	}
}
