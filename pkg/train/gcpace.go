package train

import (
	"os"
	"runtime/debug"

	"github.com/rocone/rocone/pkg/model"
)

// gcHeadroom is how far the heap may grow past the model's buffers between garbage
// collections on a large graph.
const gcHeadroom = 256 << 20

// boundGCHeadroom keeps the heap's growth between collections near gcHeadroom bytes
// when the model's buffers (parameters, gradients, Adam's moments: live bytes) are
// larger than that, unless GOGC is set in the environment. Go's default (GOGC=100) lets
// the heap grow to twice the live heap before collecting: with a 1.5M-entity model at
// d=200 (5.7 GB of tables) that is another 5.7 GB, and every update's working buffers,
// a few hundred megabytes, come from memory the process has never used, which the kernel
// must map page by page; an update then costs the graph's size in page faults rather
// than its batch, and the process's footprint doubles. Collections stay cheap: the
// tables hold no pointers, so a collection does not scan them.
func boundGCHeadroom(live int64) {
	if os.Getenv("GOGC") != "" || live <= gcHeadroom {
		return
	}
	debug.SetGCPercent(max(10, int(100*gcHeadroom/live)))
}

// tensorBytes is the size of the tensors' data.
func tensorBytes(groups ...[]model.Tensor[float32]) int64 {
	var n int64
	for _, ts := range groups {
		for _, t := range ts {
			n += 4 * int64(len(t.Data))
		}
	}
	return n
}
