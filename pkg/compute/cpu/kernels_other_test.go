//go:build !amd64

package cpu

func extraBackends() map[string]*Backend { return nil }
