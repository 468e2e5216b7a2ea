package report

import (
	"io"

	"github.com/rocone/rocone/pkg/outfile"
)

// writeAtomic writes wt's output to path through package outfile, as every stage writes
// its outputs: a file atomically (path holds either its old contents or the complete new
// ones), a device or pipe in place. Errors name the path.
func writeAtomic(path string, wt io.WriterTo) error {
	return outfile.WriteTo(path, wt)
}
