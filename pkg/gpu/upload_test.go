package gpu

// testUploadAsync checks Buffer.UploadAsync's contract on the device under test: a copy
// lands in stream order between the kernels around it (a buffer uploaded, read by a
// kernel, then uploaded over again), the host's slice may be overwritten as soon as the
// call returns (the driver staged it), and sizes beyond a staging slot's first buffer
// (1 MiB) and more uploads than slots (16) work. On the emulator the copies are
// synchronous; on a GPU they go through the page-locked ring.
func testUploadAsync(h *harness) {
	const max = 5 << 16 // floats: 1.25 MiB
	acc, err := Alloc[float32](h.d, max)
	if err != nil {
		h.t.Fatal(err)
	}
	defer acc.Free()
	tmp, err := Alloc[float32](h.d, max)
	if err != nil {
		h.t.Fatal(err)
	}
	defer tmp.Free()
	want := make([]float32, max)
	src := make([]float32, max)
	for i := range 20 {
		n := []int{1, 1000, max, 1 << 16, max - 1}[i%5]
		for j := range src[:n] {
			src[j] = float32((i*7+j)%13) - 6
			want[j] += src[j]
		}
		if err := tmp.UploadAsync(src[:n]); err != nil {
			h.t.Fatalf("upload %d (%d floats): %v", i, n, err)
		}
		for j := range src[:n] {
			src[j] = 1e9 // staged already: must not reach the device
		}
		if err := h.d.Add(acc.Slice(0, n), tmp.Slice(0, n)); err != nil {
			h.t.Fatal(err)
		}
	}
	got, err := acc.ToHost()
	if err != nil {
		h.t.Fatal(err)
	}
	for j := range got {
		if got[j] != want[j] {
			h.t.Fatalf("element %d: %g after the uploads and adds, want %g", j, got[j], want[j])
		}
	}
	if err := tmp.UploadAsync(make([]float32, max+1)); err == nil {
		h.t.Errorf("an upload larger than the buffer was accepted")
	}
}

// testDownloadAsync checks Buffer.DownloadAsync's contract: the copy sees the buffer as
// the work enqueued before it left it, not as the work enqueued after it (which runs on
// while the host waits for the copy alone), on more downloads than slots and sizes
// beyond a slot's first buffer; a fetch into a slice of the wrong length is refused.
func testDownloadAsync(h *harness) {
	const max = 5 << 16
	buf, err := Alloc[float32](h.d, max)
	if err != nil {
		h.t.Fatal(err)
	}
	defer buf.Free()
	one := h.up(make([]float32, max))
	h.ok(h.d.Fill(one, 1))
	type pending struct {
		n     int
		want  float32
		fetch func([]float32) error
	}
	var ps []pending
	for i := range 20 {
		n := []int{max, 3, 1 << 16, max - 5}[i%4]
		fetch, err := buf.DownloadAsync(n)
		h.ok(err)
		ps = append(ps, pending{n, float32(i), fetch})
		h.ok(h.d.Add(buf, one)) // after the copy: not in it
		if len(ps) == 3 {       // fetched two downloads late, as a pipeline does
			p := ps[0]
			ps = ps[1:]
			got := make([]float32, p.n)
			h.ok(p.fetch(got))
			for j, v := range got {
				if v != p.want {
					h.t.Fatalf("download of %d elements: element %d is %g, want %g", p.n, j, v, p.want)
				}
			}
		}
	}
	if err := ps[0].fetch(make([]float32, ps[0].n+1)); err == nil {
		h.t.Errorf("a fetch into a slice of another length was accepted")
	}
	if _, err := buf.DownloadAsync(max + 1); err == nil {
		h.t.Errorf("a download larger than the buffer was accepted")
	}
}
