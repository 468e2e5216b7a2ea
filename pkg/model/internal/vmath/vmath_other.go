//go:build !amd64

package vmath

const (
	hasAVX512  = false
	hasAVX2FMA = false
	hasAVX2    = false
	hasAsm     = false
)

var avx512Loops = false

func tanhAsm(dst, src []float32, div, mul, add float32) int { return 0 }
func reluAsm(x []float32) int                               { return 0 }
func overAsm(masks []uint8, src []float32, lim uint32) int  { return 0 }
func reluBwdAsm(dx, out []float32) int                      { return 0 }

func angleBwdAsm(dRaw, dTheta, theta []float32, c float32) int { return 0 }

func prefetchAsm(x []float32) {}

func sinCosAsm(s, c, x []float32) int { return 0 }
