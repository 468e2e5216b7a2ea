package pipeline

import (
	"fmt"
	"io"
	"math"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/report"
)

// PatternsConfig is what `metrics patterns` does.
type PatternsConfig struct {
	Checkpoint string
	Top        int
	Data       string    // dataset folder for relation names; optional
	Log        io.Writer // warnings; nil for none
}

// Patterns reports how symmetric, inverse and compositional the relations' learned axis
// rotations are (the RoConE paper's lemmas), strongest first.
func Patterns(cfg PatternsConfig, w io.Writer) error {
	if cfg.Top < 1 {
		return fmt.Errorf("--top %d: list at least 1 relation of each pattern", cfg.Top)
	}
	if err := cfg.checkOutputs(); err != nil {
		return err
	}
	l, err := loadModel(cfg.Checkpoint, compute.Reference[float32]{})
	if err != nil {
		return err
	}
	mc := l.model.Config
	if mc.Variant == model.ConE {
		return fmt.Errorf("%s: a cone model projects with an MLP, not a rotation; relation patterns are defined for the rocone variants", cfg.Checkpoint)
	}
	var names []string
	if cfg.Data != "" {
		d, err := datasetFor(cfg.Data, l, warnTo(nil, cfg.Log))
		if err != nil {
			return err
		}
		names = d.RelationNames
	}
	dim, r := mc.Dim, mc.EmbeddingRange()
	axes := make([][]float64, mc.NumRelations)
	for rel := range axes {
		axes[rel] = make([]float64, dim)
		for j := range axes[rel] {
			axes[rel][j] = math.Pi * math.Tanh(float64(l.model.Params.RelAxis[rel*dim+j])/r)
		}
	}
	fmt.Fprintf(w, "## Relation patterns of %s (%s, d=%d, %d relation ids)\n\n", cfg.Checkpoint, mc.Variant, dim, mc.NumRelations)
	report.WritePatterns(w, report.FindPatterns(axes, cfg.Top, cfg.Log), names)
	return nil
}
