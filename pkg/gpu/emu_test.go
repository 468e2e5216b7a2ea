//go:build cgo

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/gpu/emu"
)

var _ Timer = (*emu.Device)(nil)

// emuDevice is a device over the launch emulator, wrapped by wrap (nil: none), closed
// when the test ends. (Package gputest has the same for the packages above this one,
// which this package's tests cannot import.) Every launch of the test is profiled
// (untimed): when the test ends, one that states no work (Work) fails it, so every test
// on the emulator checks that its kernels' launch sites state their work.
func emuDevice(t *testing.T, wrap func(Driver) Driver) *Device {
	t.Helper()
	e, err := emu.New()
	if err != nil {
		t.Fatal(err)
	}
	var drv Driver = e
	if wrap != nil {
		drv = wrap(e)
	}
	d := NewDevice(drv)
	p := NewProfiler(d, false)
	d.Profile(p)
	t.Cleanup(func() {
		d.Close()
		recs, err := p.Records()
		if err == nil {
			err = CheckWork(recs)
		}
		if err != nil {
			t.Error(err)
		}
	})
	return d
}

// TestEmulatorParity runs the parity suite on the CPU launch emulator.
func TestEmulatorParity(t *testing.T) { runParity(t, emuDevice(t, nil)) }

// TestEmulatorLateCopies runs the GEMM parity cases (the pipelined kernels are the ones
// with cp.async) with every copy landing as late as its wait allows: a kernel that reads
// a slice its wait does not cover reads stale shared memory here, where the default
// (copies land at once) shows a copy into a slice still being read.
func TestEmulatorLateCopies(t *testing.T) {
	e, err := emu.New()
	if err != nil {
		t.Fatal(err)
	}
	e.SetLateCopies(true)
	d := NewDevice(e)
	defer d.Close()
	for _, c := range []struct {
		name string
		fn   func(*harness)
	}{{"Linear", testLinear}, {"LinearTF32", testLinearTF32}} {
		t.Run(c.name, func(t *testing.T) { c.fn(&harness{t: t, d: d, rng: rand.New(rand.NewPCG(7, 11))}) })
	}
}

// TestEmulatorReverseThreads runs the parity suite with every block's threads run last to
// first between barriers (TestEmulatorParity runs them first to last). The device orders
// them only by __syncthreads: a kernel missing one, so that a thread reads shared memory
// another writes in the same interval, gets the value in one order and not in the other,
// and fails its parity test in one of the two. It also takes the other guard fill,
// GuardMark: TestEmulatorParity's GuardNaN turns a read past a buffer into a NaN but
// cannot see a write of all-ones bytes (an int −1) past one, which GuardMark can.
func TestEmulatorReverseThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("the parity suite again")
	}
	runParity(t, emuDevice(t, func(d Driver) Driver {
		d.(*emu.Device).SetReverseThreads(true)
		d.(*emu.Device).SetGuardFill(emu.GuardMark)
		return d
	}))
}

// TestEmulatorTF32RoundNaN: under the emulator tf32_round is the C twin of
// compute.RoundTF32, equal bit for bit on every hand-picked pattern, NaNs included (the
// parity case TF32Round, which also runs on the device, compares NaNs by kind only).
func TestEmulatorTF32RoundNaN(t *testing.T) {
	h := &harness{t: t, d: emuDevice(t, nil)}
	var in []uint32
	for _, c := range computetest.TF32Cases {
		in = append(in, c.In)
	}
	got := roundOnDevice(h, in)
	for i, c := range computetest.TF32Cases {
		if g := math.Float32bits(got[i]); g != c.Out {
			t.Errorf("%s: tf32_round(%#08x) = %#08x, want %#08x", c.Name, c.In, g, c.Out)
		}
	}
}

// gemmBlock is the size (M = N = K) of the one-block GEMM of the fault tests below.
const gemmBlock = 16

// launchGemmBlock launches the GEMM kernel over one block of 256 threads: C (gemmBlock²,
// rows of gemmBlock) = A·B in the kernel's layout, from A and B with their row strides, no
// bias or epilogue, K unsplit; vec claims both operands' rows 16-byte aligned.
func launchGemmBlock(h *harness, kernel string, A *F32, lda int, B *F32, ldb int, vec bool) error {
	const n = gemmBlock
	return h.d.launch(kernel, gemmWork(n, n, n, gemmEnd{}), [3]int{1, 1, 1}, [3]int{256, 1, 1},
		i32(n), i32(n), i32(n), ptr(A), i32(lda), ptr(B), i32(ldb), ptr(h.zeros(n*n)), i32(n), ptr[float32](nil),
		boolArg(false), boolArg(false), ptr[float32](nil), boolArg(vec), boolArg(vec), i32(n), ptr[float32](nil),
		ptr[int32](nil))
}

// TestEmulatorCpAsyncAlignment: a cp.async whose 16 bytes are off their alignment fails
// the launch, as it faults on the device, though the copy (a memcpy here) would work on
// the CPU: a pipelined GEMM launched with an operand 4 bytes into its allocation, its
// flags claiming 16-byte rows (the host checks, gemm's aligned, never pass it so).
func TestEmulatorCpAsyncAlignment(t *testing.T) {
	h := &harness{t: t, d: emuDevice(t, nil)}
	const n = gemmBlock
	for _, c := range []struct {
		name string
		A    *F32
		want string
	}{
		{"aligned", h.zeros(n * n), ""},
		{"4 bytes off", h.zerosAt(1, n*n), "cp.async's global source needs 16-byte alignment"},
	} {
		err := launchGemmBlock(h, "gemm_tf32_pipe_nt", c.A, n, h.zeros(n*n), n, true)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "misaligned address") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want a misaligned address, %q", c.name, err, c.want)
		}
	}
}

// TestEmulatorReadPastOperand: a GEMM whose operand's last row runs past the end of its
// allocation fails the launch, through each way an operand is read (the pipelined
// kernels' cp.async, the register-staged ones' rt_load4, in both layouts). Those values
// would go only into outputs past the edge, which are never written, and the guard
// zone's NaNs reach no result, so a read past the end shows nowhere else.
func TestEmulatorReadPastOperand(t *testing.T) {
	h := &harness{t: t, d: emuDevice(t, nil)}
	const n = gemmBlock
	for _, c := range []struct {
		kernel         string
		vec            bool
		shortA, shortB int    // floats missing from the end of A's, B's allocation
		want, past     string // "" or the error's start, and how far past the end it says
	}{
		{"gemm_tf32_pipe_nt", true, 0, 0, "", ""},
		{"gemm_tf32_pipe_nt", true, 1, 0, "cp.async's global source: 16 bytes at", "run 4 bytes past the end"},
		{"gemm_tf32_pipe_tn", true, 0, 4, "cp.async's global source: 16 bytes at", "start 0 bytes past the end"},
		{"gemm_tf32_nt", true, 0, 0, "", ""},
		{"gemm_tf32_nt", true, 0, 1, "a GEMM operand's load: 16 bytes at", "run 4 bytes past the end"},
		{"gemm_nt", false, 1, 0, "a GEMM operand's load: 16 bytes at", "run 4 bytes past the end"},
		{"gemm_tn", false, 0, 0, "", ""},
		{"gemm_tn", false, 3, 0, "a GEMM operand's load: 16 bytes at", "run 12 bytes past the end"},
	} {
		// Square operands: each row stride is n in either layout (nt: A [m][k], B [n][k];
		// tn: A [k][m], B [k][n]).
		name := fmt.Sprintf("%s short A %d B %d", c.kernel, c.shortA, c.shortB)
		err := launchGemmBlock(h, c.kernel, h.zeros(n*n-c.shortA), n, h.zeros(n*n-c.shortB), n, c.vec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.past)):
			t.Errorf("%s: error %v, want %q … %q", name, err, c.want, c.past)
		}
	}
}
