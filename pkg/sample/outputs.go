package sample

import "github.com/rocone/rocone/pkg/outfile"

// checkOutput checks the output before any work and before any input is read
// (outfile.Check): writable, and not one of the dataset's files or the pickle.
func checkOutput(src Source, pickle, out string) (release func(), err error) {
	inputs := append(outfile.DirFiles("--data", src.Dir), outfile.Path{Flag: "--pickle", Path: pickle})
	return outfile.Claim(inputs, []outfile.Path{{Flag: "-o", Path: out}})
}
