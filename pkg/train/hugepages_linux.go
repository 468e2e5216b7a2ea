package train

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageSize is the size of a transparent huge page on amd64 and arm64 Linux.
const hugePageSize = 2 << 20

// adviseHugePages asks the kernel to back the 2 MiB-aligned interior of each buffer of
// at least 4 MiB with transparent huge pages (madvise MADV_HUGEPAGE), and with collapse,
// to rebuild memory already written in huge pages now (MADV_COLLAPSE, Linux 6.1+). It is
// advice: where the kernel does not support it or has none to give, the buffers stay in
// 4 KiB pages and nothing else changes.
//
// Why: an update gathers and scatters tens of thousands of random rows of the entity
// table, its gradient and Adam's moments. With 4 KiB pages a 1.2 GB table spans 300,000
// pages, far beyond the TLB, so each row costs a page walk, and under virtualisation a
// walk of both the guest's and the host's tables: at 1.5M entities that was most of an
// update's time beyond the batch's arithmetic. 2 MiB pages cut the pages 512-fold; mapping
// them is faster too (one fault for 2 MiB).
func adviseHugePages(collapse bool, bufs ...[]float32) {
	for _, b := range bufs {
		if len(b)*4 < 2*hugePageSize {
			continue
		}
		base := unsafe.Pointer(unsafe.SliceData(b))
		start := uintptr(base)
		lo, hi := hugeRegion(start, uintptr(len(b))*4)
		if hi <= lo {
			continue
		}
		region := unsafe.Slice((*byte)(unsafe.Add(base, lo-start)), hi-lo)
		_ = unix.Madvise(region, unix.MADV_HUGEPAGE)
		if collapse {
			_ = unix.Madvise(region, unix.MADV_COLLAPSE)
		}
	}
}

// hugeRegion is the 2 MiB-aligned interior [lo, hi) of the n bytes at start; hi <= lo
// when it holds no whole huge page.
func hugeRegion(start, n uintptr) (lo, hi uintptr) {
	lo = (start + hugePageSize - 1) &^ (hugePageSize - 1)
	hi = (start + n) &^ (hugePageSize - 1)
	return lo, hi
}
