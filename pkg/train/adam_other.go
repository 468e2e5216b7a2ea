//go:build !amd64

package train

func (c *adamScalars) updateFast(p, g, m, v []float32) (done int, bad bool) { return 0, false }

// prefetch is a no-op where there is no assembly.
func prefetch(x []float32) {}

const (
	hasAdamAVX512 = false
	hasAdamAVX2   = false
)

var adamAVX512Loop = false
