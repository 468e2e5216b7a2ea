package pipeline

import (
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/train"
)

// The outputs of each stage are checked before any work and before any input is read
// (outfile.Check): writable, and neither one of the stage's inputs nor each other; the
// stages that write files claim them for the run (outfile.Claim: release when done).

func (cfg EmbedConfig) checkOutputs() (release func(), err error) {
	return outfile.Claim(
		[]outfile.Path{{Flag: "--checkpoint", Path: cfg.Checkpoint}, {Flag: "--queries", Path: cfg.Queries}},
		[]outfile.Path{{Flag: "-o", Path: cfg.Output}})
}

func (cfg RankConfig) checkOutputs() (release func(), err error) {
	inputs := []outfile.Path{{Flag: "--checkpoint", Path: cfg.Checkpoint}, {Flag: "--queries", Path: cfg.Queries}, {Flag: "--cones", Path: cfg.Cones}}
	inputs = append(inputs, outfile.DirFiles("--data", cfg.Data)...)
	outputs := []outfile.Path{{Flag: "-o", Path: cfg.Output}}
	if cfg.Profile != "" {
		outputs = append(outputs, outfile.Path{Flag: "--profile", Path: cfg.Profile, File: true},
			outfile.Path{Flag: "--profile (its CSV)", Path: train.ProfileCSV(cfg.Profile), File: true})
	}
	return outfile.Claim(inputs, outputs)
}

func (cfg MetricsConfig) checkOutputs() (release func(), err error) {
	inputs := []outfile.Path{{Flag: "--log", Path: cfg.TrainLog}}
	for _, r := range cfg.Ranks {
		inputs = append(inputs, outfile.Path{Flag: "ranks file", Path: r})
	}
	return outfile.Claim(inputs, []outfile.Path{{Flag: "the table on", Path: "-"}, {Flag: "-o", Path: cfg.Output},
		{Flag: "--plot", Path: cfg.Plot}, {Flag: "--curves", Path: cfg.CurvePlot}})
}

// StdoutOutput is the output check of a stage whose only output is what it prints on
// stdout: stdout must not be one of its inputs (`>> input`, `1<> input`).
func StdoutOutput(inputs []outfile.Path) error {
	return outfile.Check(inputs, []outfile.Path{{Flag: "the report on", Path: "-"}})
}

func (cfg PatternsConfig) checkOutputs() error {
	inputs := []outfile.Path{{Flag: "--checkpoint", Path: cfg.Checkpoint}}
	return StdoutOutput(append(inputs, outfile.DirFiles("--data", cfg.Data)...))
}
