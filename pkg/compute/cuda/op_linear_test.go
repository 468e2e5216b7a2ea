package cuda

import (
	"fmt"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// testLinear: shapes over several 64×64 tiles with ragged edges and K not a multiple of
// 16, on the device buffers directly.
func testLinear(h *harness) {
	ref := compute.Reference[float32]{}
	for _, sh := range []struct{ rows, in, out int }{{130, 37, 67}, {5, 131, 3}, {1, 0, 4}} {
		h.t.Run(fmt.Sprint(sh.rows, "x", sh.in, "x", sh.out), func(t *testing.T) {
			x, w, b := h.uniform(sh.rows*sh.in, -1, 1), h.uniform(sh.out*sh.in, -1, 1), h.uniform(sh.out, -1, 1)
			y := make([]float32, sh.rows*sh.out)
			ref.LinearForward(y, x, w, b, sh.rows, sh.in, sh.out)
			X, W, B, Y := h.up(x), h.up(w), h.up(b), h.zeros(len(y))
			h.ok(h.d.LinearForward(Y, X, W, B, sh.rows, sh.in, sh.out))
			compare(t, "y", y, h.down(Y))

			dy := h.uniform(sh.rows*sh.out, -1, 1)
			dx, dw, db := h.uniform(len(x), -1, 1), h.uniform(len(w), -1, 1), h.uniform(len(b), -1, 1)
			DX, DW, DB := h.up(dx), h.up(dw), h.up(db)
			ref.LinearBackward(dx, dw, db, dy, x, w, sh.rows, sh.in, sh.out)
			h.ok(h.d.LinearBackward(DX, DW, DB, h.up(dy), X, W, sh.rows, sh.in, sh.out))
			compare(t, "dx", dx, h.down(DX))
			compare(t, "dw", dw, h.down(DW))
			compare(t, "db", db, h.down(DB))
		})
	}
}
