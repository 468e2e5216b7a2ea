// Package pipeline is the glue of the stages after sampling: each function reads its input
// artifacts, checks that they belong together, calls the model (pkg/model), the evaluation
// (pkg/eval) or the report (pkg/report), and writes its output artifact atomically. The
// commands in cmd/ parse flags and call one function here; the model and the statistics
// never see a file.
package pipeline
