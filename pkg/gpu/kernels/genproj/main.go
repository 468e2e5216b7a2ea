// Command genproj writes projection.h, the kernels' numbers of the projection operators,
// from their one definition (compute.Projections). Run by `go generate ./pkg/gpu/kernels`.
package main

import (
	"log"
	"os"

	"github.com/rocone/rocone/pkg/compute"
)

func main() {
	if err := os.WriteFile("projection.h", []byte(compute.ProjectionHeader()), 0o644); err != nil {
		log.Fatal(err)
	}
}
