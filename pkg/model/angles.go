package model

// Angles returns the angles π·tanh(x/R) of raw table values, with this model's R: what
// the model makes of a row of the entity table (the anchor's axis), of the relation axis
// table (the axis rotation) and of the relation aperture table (the aperture offset, or
// for ConE the MLP's aperture input) before it uses it. It is the same AngleForward, in
// the same precision, as every forward pass, so that an export (pkg/export) of the
// angles is exactly what the model computes with.
func (m *Model[T]) Angles(raw []T) []T {
	out := make([]T, len(raw))
	AngleForward(out, raw, m.embeddingRange())
	return out
}
