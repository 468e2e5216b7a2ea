package sample

import "github.com/rocone/rocone/pkg/outfile"

// checkOutput checks the output before any work and before any input is read
// (outfile.Check): writable, and not one of the dataset's files or the pickle.
func checkOutput(src Source, pickle, out string) error {
	inputs := append(outfile.DirFiles("--data", src.Dir), outfile.Path{Flag: "--pickle", Path: pickle})
	return outfile.Check(inputs, []outfile.Path{{Flag: "-o", Path: out}})
}
