//go:build !linux

package train

// adviseHugePages is Linux's transparent huge page advice (hugepages_linux.go); elsewhere
// it does nothing.
func adviseHugePages(collapse bool, bufs ...[]float32) {}
