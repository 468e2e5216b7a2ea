package train

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeRegion checks the aligned interior that adviseHugePages advises: whole 2 MiB
// pages only, never a byte outside the buffer.
func TestHugeRegion(t *testing.T) {
	const M = hugePageSize
	for _, tc := range []struct {
		name          string
		start, n      uintptr
		wantLo, wantH uintptr
	}{
		{"aligned, whole pages", 4 * M, 3 * M, 4 * M, 7 * M},
		{"aligned, a partial page at the end", 4 * M, 3*M + 100, 4 * M, 7 * M},
		{"unaligned start", 4*M + 8, 3 * M, 5 * M, 7 * M},
		{"unaligned both ends", 4*M + 4096, 2*M + 8192, 5 * M, 6 * M},
		{"no whole page", 4*M + 4, 2*M - 8, 5 * M, 5 * M},
		{"smaller than a page", 4*M + 4, 1000, 5 * M, 4 * M},
		{"empty", 4 * M, 0, 4 * M, 4 * M},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := hugeRegion(tc.start, tc.n)
			if lo != tc.wantLo || hi != tc.wantH {
				t.Fatalf("got [%#x, %#x), want [%#x, %#x)", lo, hi, tc.wantLo, tc.wantH)
			}
			if hi > lo && (lo < tc.start || hi > tc.start+tc.n || lo%M != 0 || hi%M != 0) {
				t.Fatalf("[%#x, %#x) is not an aligned part of [%#x, %#x)", lo, hi, tc.start, tc.start+tc.n)
			}
		})
	}
}

// TestAdviseHugePages checks that the advice never changes a buffer's contents, with or
// without collapse (which fails on kernels before 6.1: the failure is ignored), that
// buffers too small or empty are fine, and, where the kernel has transparent huge pages,
// that the advised interior carries the kernel's huge page flag (hg in /proc/self/smaps).
func TestAdviseHugePages(t *testing.T) {
	big := make([]float32, 3*hugePageSize/4+123) // 6 MiB and a bit: at least one whole huge page
	small := make([]float32, 1000)
	for i := range big {
		big[i] = float32(i)
	}
	for i := range small {
		small[i] = float32(-i)
	}
	adviseHugePages(false)
	adviseHugePages(false, nil, []float32{}, small)
	adviseHugePages(false, big)
	adviseHugePages(true, big, small)
	for i, x := range big {
		if x != float32(i) {
			t.Fatalf("big[%d] = %v after the advice, want %d", i, x, i)
		}
	}
	for i, x := range small {
		if x != float32(-i) {
			t.Fatalf("small[%d] = %v after the advice, want %d", i, x, -i)
		}
	}

	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("no transparent huge pages on this kernel")
	}
	lo, hi := hugeRegion(uintptr(unsafe.Pointer(&big[0])), uintptr(len(big))*4)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	// Every mapping that overlaps [lo, hi) must have the flag.
	covered := uintptr(0)
	var overlap bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if a, b, ok := mappingRange(line); ok {
			overlap = a < hi && b > lo
			if overlap {
				covered += min(b, hi) - max(a, lo)
			}
			continue
		}
		if overlap && strings.HasPrefix(line, "VmFlags:") && !strings.Contains(line, " hg") {
			t.Fatalf("a mapping of the advised region lacks the huge page flag: %s", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if covered != hi-lo {
		t.Fatalf("the mappings cover %d bytes of the %d advised", covered, hi-lo)
	}
}

// mappingRange parses the address range of a mapping's first line in /proc/self/smaps
// ("7f..-7f.. rw-p ...").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	field, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(field, "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
