package train

// The helpers of this package's tests, for its external tests (package train_test: the
// device tests, which import package gpumodel, itself an importer of this package).
var (
	Files           = files
	TinyConfig      = tinyConfig
	RunT            = run
	ResumeT         = resume
	LogCurves       = logCurves
	SameCheckpoints = sameCheckpoints
	SameRows        = sameRows
	NewAdamAfter10  = newAdamAfterStep10
)
