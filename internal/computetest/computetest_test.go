package computetest

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// The reference conforms to itself; a new backend adds one line like this.
func TestReference(t *testing.T) { CheckBackend(t, compute.Reference[float32]{}) }
