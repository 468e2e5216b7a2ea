package compute

import "fmt"

// DeferredErrors is implemented by a backend whose kernels can fail after they are called:
// Kernels' methods return no error, so a device backend (cuda.Backend) records the first
// device error (a failed launch, out of memory, a lost device), computes that call and
// every later one on the CPU instead, and reports the error through Err. A wrapper of a
// backend (a timing wrapper, say) forwards Err to the backend it wraps.
type DeferredErrors interface {
	// Err returns the first error the backend recorded, or nil.
	Err() error
}

// Err returns the recorded error of k if k records errors (DeferredErrors), else nil, wrapped
// so that its message says that the results since are not the device's. Every stage checks
// it before it commits an artifact computed through k (and stops early where it can): the
// results after a device error are still correct, but a run asked to use the device must
// not pass silently on the CPU, nor hide a device that is failing.
func Err[T Float](k Kernels[T]) error {
	d, ok := k.(DeferredErrors)
	if !ok {
		return nil
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("the compute backend failed (its kernels fell back to the CPU since; nothing is written): %w", err)
	}
	return nil
}
