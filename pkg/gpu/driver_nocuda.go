//go:build !cuda

package gpu

// Open would open CUDA device ordinal; this binary was built without the cuda tag, so
// it returns ErrNotBuilt. Callers need no build tags of their own: they fall back to the
// CPU on any error from Open.
func Open(ordinal int) (*Device, error) { return nil, ErrNotBuilt }

// Built reports whether this binary has the real CUDA driver (the cuda build tag).
const Built = false
