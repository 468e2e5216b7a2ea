package artifact

import "testing"

// Fuzz targets for every artifact reader. Each is seeded with a small real artifact of its
// kind in the IPC file and stream formats (testdata/), and reads every input both from a
// regular file and through a pipe on stdin. The property: no panic, an error that names
// the input or a value the reader's checks accepted, and allocation bounded by a multiple
// of the input's size (allocationBound). `make fuzz` runs each in turn.

func fuzzArtifact(f *testing.F, kind string) {
	var read func(string) error
	for _, k := range artifactKinds {
		if k.kind == kind {
			read = k.read
		}
	}
	f.Add(sample(f, kind, false))
	f.Add(sample(f, kind, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, pipe := range []bool{false, true} {
			n := allocated(func() { readAs(t, read, data, pipe) })
			if n > allocationBound(len(data)) {
				t.Fatalf("pipe %v: allocated %d bytes for %d bytes of input", pipe, n, len(data))
			}
		}
	})
}

func FuzzQueries(f *testing.F)    { fuzzArtifact(f, "queries") }
func FuzzCheckpoint(f *testing.F) { fuzzArtifact(f, "checkpoint") }
func FuzzCones(f *testing.F)      { fuzzArtifact(f, "cones") }
func FuzzRanks(f *testing.F)      { fuzzArtifact(f, "ranks") }
func FuzzTrainLog(f *testing.F)   { fuzzArtifact(f, "trainlog") }
func FuzzMetrics(f *testing.F)    { fuzzArtifact(f, "metrics") }
func FuzzAnswers(f *testing.F)    { fuzzArtifact(f, "answers") }
