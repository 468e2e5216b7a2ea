package gpu

// Cones is a batch of N cones in Dim dimensions on the device, row-major like
// model.Cones.
type Cones struct {
	Axis, Half *F32
	N, Dim     int
}

// NewCones allocates a zero batch.
func NewCones(d *Device, n, dim int) (Cones, error) {
	a, err := Alloc[float32](d, n*dim)
	if err != nil {
		return Cones{}, err
	}
	h, err := Alloc[float32](d, n*dim)
	if err != nil {
		a.Free()
		return Cones{}, err
	}
	return Cones{Axis: a, Half: h, N: n, Dim: dim}, nil
}

// Free releases both buffers.
func (c Cones) Free() error { return FreeAll(c.Axis, c.Half) }

func (c Cones) size() int { return c.N * c.Dim }
