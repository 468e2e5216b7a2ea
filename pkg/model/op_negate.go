package model

// Negation (docs/model.md §5), ConE's rule, equal to RoConE's boundary swap:
//
//	a' = a − π if a ≥ 0, else a + π
//	h' = π − h
//
// It has no parameters. Its Jacobian is diag(1, −1); the branch at a = 0 is not
// differentiated (a jump of 2π in the axis representation only).

// NegateForward writes the complement of each cone of in to out.
func NegateForward[T Float](out, in Cones[T]) {
	for i, a := range in.Axis {
		if a >= 0 {
			out.Axis[i] = a - pi
		} else {
			out.Axis[i] = a + pi
		}
	}
	for i, h := range in.Half {
		out.Half[i] = pi - h
	}
}

// NegateBackward adds the gradient of NegateForward given dOut into dIn.
func NegateBackward[T Float](dIn, dOut Cones[T]) {
	for i, g := range dOut.Axis {
		dIn.Axis[i] += g
	}
	for i, g := range dOut.Half {
		dIn.Half[i] -= g
	}
}
