package gpu

// Cones is a batch of N cones in Dim dimensions on the device, row-major like
// model.Cones.
type Cones struct {
	Axis, Half *F32
	N, Dim     int
}

// Free releases both buffers.
func (c Cones) Free() error { return FreeAll(c.Axis, c.Half) }

func (c Cones) size() int { return c.N * c.Dim }
