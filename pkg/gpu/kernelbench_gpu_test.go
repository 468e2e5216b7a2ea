//go:build cuda

package gpu

import "testing"

// paperSize: a path update at FB15k-237 d=1600, b=512, n=128 (129 candidates per query),
// the intersection's input rows (2 branches × 512).
var paperSize = benchSize{queries: 512, cands: 129, dim: 1600, entities: 14505, rows: 1024}

// benchDevice is GPU 0 at the paper's size (go test -tags cuda -bench Kernels).
func benchDevice(b *testing.B) (*Device, benchSize) { return gpuDevice(b), paperSize }
