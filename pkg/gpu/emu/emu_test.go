//go:build cgo

package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/rocone/rocone/pkg/gpu/kernels"
)

// TestKernelsMatchPTX checks that the emulator runs exactly the kernels the PTX holds,
// with the same parameter types: the C++ signatures the emulator sees and the PTX nvcc
// produced come from the same sources, so a mismatch means stale PTX or a kernel missing
// from emu.cc's table.
func TestKernelsMatchPTX(t *testing.T) {
	emu := map[string]string{}
	for _, k := range Kernels() {
		if !strings.HasPrefix(k.Name, "emu_selftest_") { // the emulator's own, in emu.cc
			emu[k.Name] = k.Params
		}
	}
	for _, e := range kernels.Entries() {
		p, ok := emu[e.Name]
		switch {
		case !ok:
			t.Errorf("kernel %s (%s.ptx) is not in emu.cc's table", e.Name, e.Module)
		case p != e.Params:
			t.Errorf("kernel %s: emulator parameters %q, PTX %q (stale PTX? run go generate)", e.Name, p, e.Params)
		}
		delete(emu, e.Name)
	}
	for name := range emu {
		t.Errorf("emulated kernel %s is not in the PTX (stale PTX? run go generate)", name)
	}
}

func f32(x float32) uint64 { return uint64(math.Float32bits(x)) }

func TestLaunchAndChecks(t *testing.T) {
	d := newDevice(t)
	const n = 1000
	p, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	// fill_f32(x, value, n) over a grid smaller than n: the grid-stride loop covers it.
	if err := d.Launch("fill_f32", [3]int{3, 1, 1}, [3]int{64, 1, 1}, []uint64{p, f32(2.5), n}); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, n)
	if err := d.CopyOut(unsafe.Pointer(&out[0]), p, 4*n); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != 2.5 {
			t.Fatalf("out[%d] = %g", i, v)
		}
	}
	for _, c := range []struct {
		name        string
		kernel      string
		grid, block [3]int
		args        []uint64
		want        string
	}{
		{"unknown kernel", "nope", [3]int{1, 1, 1}, [3]int{1, 1, 1}, nil, "no kernel"},
		{"argument count", "fill_f32", [3]int{1, 1, 1}, [3]int{1, 1, 1}, []uint64{p}, "takes 3 arguments"},
		{"block too large", "fill_f32", [3]int{1, 1, 1}, [3]int{2048, 1, 1}, []uint64{p, 0, 1}, "invalid launch"},
		{"empty grid", "fill_f32", [3]int{0, 1, 1}, [3]int{1, 1, 1}, []uint64{p, 0, 1}, "invalid launch"},
		{"grid y", "fill_f32", [3]int{1, 70000, 1}, [3]int{1, 1, 1}, []uint64{p, 0, 1}, "invalid launch"},
		{"wild pointer", "fill_f32", [3]int{1, 1, 1}, [3]int{1, 1, 1}, []uint64{12345, 0, 1}, "not a device pointer"},
		{"overflow", "fill_f32", [3]int{1, 1, 1}, [3]int{32, 1, 1}, []uint64{p, 0, n + 3}, "write past the end"},
	} {
		err := d.Launch(c.kernel, c.grid, c.block, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if err := d.Free(p); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("Free after an overflow: %v", err)
	}
	if err := d.Free(p); err == nil {
		t.Error("double free not reported")
	}
	if err := d.CopyIn(p, unsafe.Pointer(&out[0]), 4); err == nil {
		t.Error("copy into freed memory not reported")
	}
}

// TestBarrier runs col_sum, whose block reduction needs __syncthreads between the writes
// and the reads of shared memory, with several blocks in flight on several threads.
func TestBarrier(t *testing.T) {
	d := newDevice(t)
	const rows, cols = 37, 70
	dy := make([]float32, rows*cols)
	for i := range dy {
		dy[i] = float32(i%13) - 6
	}
	pdy, _ := d.Alloc(4 * len(dy))
	pdb, _ := d.Alloc(4 * cols)
	if err := d.CopyIn(pdy, unsafe.Pointer(&dy[0]), 4*len(dy)); err != nil {
		t.Fatal(err)
	}
	// col_sum's block: 32 columns × COL_SUM_LANES (32) row lanes.
	if err := d.Launch("col_sum", [3]int{3, 1, 1}, [3]int{1024, 1, 1}, []uint64{pdb, pdy, cols, rows, cols}); err != nil {
		t.Fatal(err)
	}
	db := make([]float32, cols)
	d.CopyOut(unsafe.Pointer(&db[0]), pdb, 4*cols)
	for c := 0; c < cols; c++ {
		var s float32
		for r := 0; r < rows; r++ {
			s += dy[r*cols+c]
		}
		if db[c] != s {
			t.Fatalf("db[%d] = %g, want %g", c, db[c], s)
		}
	}
}

// TestMisalignedAddress: a load or store at an address that is not a multiple of its
// type's alignment fails the launch, as it faults on the device (CUDA's "misaligned
// address"), through a kernel's vector parameter (ent_half_sincos's float2 table), a
// float4 access through a parameter (gather_rows4) and a float one off its 4 bytes.
func TestMisalignedAddress(t *testing.T) {
	d := newDevice(t)
	p, q := upload(t, d, make([]byte, 256)), upload(t, d, make([]byte, 256))
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		name   string
		kernel string
		args   []uint64
		want   string // "" for none
	}{
		{"float2 aligned", "ent_half_sincos", []uint64{p + 8, q + 4, 4}, ""},
		{"float2 off 8", "ent_half_sincos", []uint64{p + 4, q, 4}, "float2' needs 8-byte alignment (distance.cu:"},
		{"float4 aligned", "gather_rows4", []uint64{p + 16, q + 16, q, 1, 1}, ""},
		{"float4 off 16", "gather_rows4", []uint64{p + 8, q, q, 1, 1}, "float4' needs 16-byte alignment (rows.cu:"},
		{"float off 4", "fill_f32", []uint64{p + 2, f32(1), 4}, "'float' needs 4-byte alignment"},
	} {
		err := d.Launch(c.kernel, one, [3]int{4, 1, 1}, c.args)
		if c.want == "" {
			expectFault(t, c.name, err)
		} else {
			expectFault(t, c.name, err, "misaligned address", c.want)
		}
	}
}

// TestOutOfBounds: an index past an array of known size (a __shared__ tile, a per-thread
// array) ends the thread with a fault and fails the launch, naming the index, the array's
// type and the line, where the CPU would read or write a neighbouring variable:
// loss_head_fwd_terms keeps one row of its shared red[LOSS_QUERIES][32] per warp, so a
// block of 16 warps where the host launches 8 indexes row 8 of 8.
func TestOutOfBounds(t *testing.T) {
	d := newDevice(t)
	const Q, K = 16, 2
	var cls, one []byte
	for _, v := range []int32{1, Q, 0, 0} { // one class: a branch, Q queries, root row 0, query 0
		cls = binary.LittleEndian.AppendUint32(cls, uint32(v))
	}
	one = binary.LittleEndian.AppendUint32(one, math.Float32bits(1))
	up := func(b []byte) uint64 { return upload(t, d, b) }
	part, dist, clsp, modulus, w := up(make([]byte, 3*Q*8)), up(make([]byte, Q*K*4)), up(cls), up(one), up(make([]byte, Q*4))
	args := []uint64{part, dist, clsp, 1, modulus, f32(1), w, Q, K}
	for _, c := range []struct {
		threads int
		want    string // "" for none
	}{
		{256, ""},
		{512, "index 8 out of bounds for type 'double [8][32]' (loss.cu:"},
	} {
		err := d.Launch("loss_head_fwd_terms", [3]int{1, 1, 1}, [3]int{c.threads, 1, 1}, args)
		if c.want == "" {
			expectFault(t, fmt.Sprintf("%d threads", c.threads), err)
		} else {
			expectFault(t, fmt.Sprintf("%d threads", c.threads), err, c.want)
		}
	}
}

// TestSharedPoisoned: a shared array holds 0xFF bytes at the start of every block, as
// garbage stands in for the SM's previous block's data on the device, and not the zeros
// of a fresh thread-local copy or the previous block's values, which would hide a read
// of an element no thread of the block wrote. 64 blocks of 32 threads, one worker and
// four, in both thread orders.
func TestSharedPoisoned(t *testing.T) {
	const blocks = 64
	for _, workers := range []string{"1", "4"} {
		t.Setenv("ROCONE_EMU_THREADS", workers)
		d := newDevice(t)
		for _, reversed := range []bool{false, true} {
			d.SetReverseThreads(reversed)
			out := upload(t, d, make([]byte, 4*blocks))
			for range 2 { // and again: the second launch's blocks find the first's values
				if err := d.Launch("emu_selftest_shared", [3]int{blocks, 1, 1}, [3]int{32, 1, 1}, []uint64{out}); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, 4*blocks)
			if err := d.CopyOut(unsafe.Pointer(&got[0]), out, len(got)); err != nil {
				t.Fatal(err)
			}
			for b := range blocks {
				if w := binary.LittleEndian.Uint32(got[4*b:]); w != 0xffffffff {
					t.Fatalf("%s workers, reversed %v: block %d read %#x from its unwritten shared word, want 0xffffffff", workers, reversed, b, w)
				}
			}
		}
	}
}

// TestReverseThreads: SetReverseThreads runs a block's threads last to first. Three
// threads of scatter_add_rows add 1, 1e8 and −1e8 into one float, atomically and in their
// order: first to last the 1 is lost in 1e8's rounding (0), last to first it survives (1).
func TestReverseThreads(t *testing.T) {
	d := newDevice(t)
	up := func(b []byte) uint64 { return upload(t, d, b) }
	var src []byte
	for _, x := range []float32{1, 1e8, -1e8} {
		src = binary.LittleEndian.AppendUint32(src, math.Float32bits(x))
	}
	srcp, idx := up(src), up(make([]byte, 12)) // every row into row 0
	for _, c := range []struct {
		reversed bool
		want     float32
	}{{false, 0}, {true, 1}} {
		d.SetReverseThreads(c.reversed)
		table := up(make([]byte, 4))
		if err := d.Launch("scatter_add_rows", [3]int{1, 1, 1}, [3]int{3, 1, 1}, []uint64{table, srcp, idx, 3, 1}); err != nil {
			t.Fatal(err)
		}
		var got float32
		if err := d.CopyOut(unsafe.Pointer(&got), table, 4); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("reversed %v: the sum is %g, want %g", c.reversed, got, c.want)
		}
	}
}

// upload allocates device memory holding b.
func upload(t *testing.T, d *Device, b []byte) uint64 {
	t.Helper()
	p, err := d.Alloc(len(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyIn(p, unsafe.Pointer(&b[0]), len(b)); err != nil {
		t.Fatal(err)
	}
	return p
}

// expectFault checks a launch's error: none when want is empty, else one holding every
// string of want.
func expectFault(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %v, want %q", what, err, want)
			return
		}
	}
}

// newDevice is a new emulated device, closed when the test ends.
func newDevice(t *testing.T) *Device {
	t.Helper()
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestBoundsStrict: the emulator is compiled with -fsanitize=bounds-strict, not plain
// bounds, which leaves a struct's last array member unchecked (GCC takes it for a
// flexible array). No kernel's arguments can index such a member out of bounds (the one
// there is, adam_program's K, is indexed by loop counters), so this checks the flag
// itself: without it, K[i] filled for i <= 6 passed every test.
func TestBoundsStrict(t *testing.T) {
	src, err := os.ReadFile("emu.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "#cgo CXXFLAGS:") {
			if !slices.Contains(strings.Fields(line), "-fsanitize=alignment,bounds-strict") {
				t.Errorf("emu.go: %q lacks -fsanitize=alignment,bounds-strict", line)
			}
			return
		}
	}
	t.Error("emu.go: no #cgo CXXFLAGS line")
}

// TestGuardFills: what each guard fill shows. add_f32 over one element more than its
// source has reads the word after the source: NaN under GuardNaN, GuardMark's pattern
// (a tiny number a sum would swallow) under GuardMark. fill_f32 one element past its
// buffer writes the word after it: a write of the fill itself goes unseen, any other
// fails the launch, which is why the tests run the parity suite under both fills. The
// fill is set after the allocations, so SetGuardFill must refill the live zones.
func TestGuardFills(t *testing.T) {
	const n = 5
	word := func(b byte) uint32 { return uint32(b) * 0x01010101 }
	for _, fill := range []byte{GuardNaN, GuardMark} {
		t.Run(fmt.Sprintf("%#x", fill), func(t *testing.T) {
			d := newDevice(t)
			src := upload(t, d, slices.Repeat([]byte{0, 0, 0x80, 0x3f}, n)) // n ones
			dst := upload(t, d, make([]byte, 4*(n+1)))
			d.SetGuardFill(fill)
			if err := d.Launch("add_f32", [3]int{1, 1, 1}, [3]int{32, 1, 1}, []uint64{dst, src, n + 1}); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4*(n+1))
			if err := d.CopyOut(unsafe.Pointer(&got[0]), dst, len(got)); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != 1 {
					t.Fatalf("dst[%d] = %g, want 1", i, v)
				}
			}
			if w := binary.LittleEndian.Uint32(got[4*n:]); w != word(fill) {
				t.Errorf("the word read past the source: %#08x, want %#08x", w, word(fill))
			}
			for _, write := range []byte{GuardNaN, GuardMark} {
				err := d.Launch("fill_f32", [3]int{1, 1, 1}, [3]int{32, 1, 1}, []uint64{src, uint64(word(write)), n + 1})
				switch {
				case write == fill && err != nil:
					t.Errorf("a write of %#08x into zones of %#x: %v, want it unseen", word(write), fill, err)
				case write != fill && (err == nil || !strings.Contains(err.Error(), "write past the end")):
					t.Errorf("a write of %#08x into zones of %#x: error %v, want a write past the end", word(write), fill, err)
				}
				d.SetGuardFill(fill) // mend the zone for the next write
			}
		})
	}
}
