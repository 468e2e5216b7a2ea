// Package qecone connects the project to QE-ConE, ConE's reference implementation
// (PyTorch): it reads the golden fixtures that scripts/reference/make_fixtures.py makes
// with QE-ConE's own code, and converts QE-ConE checkpoints (torch.save files) into this
// project's checkpoint artifact (see Import).
package qecone

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// Array is a float32 array of a fixture: its shape and its values, row-major. In the JSON
// file it is {"shape": [...], "f32": base64 of little-endian float32 bytes}, so values are
// exact.
type Array struct {
	Shape  []int
	Values []float32
}

// UnmarshalJSON decodes {"shape", "f32"}.
func (a *Array) UnmarshalJSON(b []byte) error {
	var raw struct {
		Shape []int  `json:"shape"`
		F32   string `json:"f32"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	bytes, err := base64.StdEncoding.DecodeString(raw.F32)
	if err != nil {
		return fmt.Errorf("f32: %w", err)
	}
	n := 1
	for _, s := range raw.Shape {
		if s < 0 {
			return fmt.Errorf("negative dimension in shape %v", raw.Shape)
		}
		n *= s
	}
	if len(bytes) != 4*n {
		return fmt.Errorf("shape %v needs %d float32 values, the data holds %d bytes", raw.Shape, n, len(bytes))
	}
	a.Shape = raw.Shape
	a.Values = make([]float32, n)
	for i := range a.Values {
		a.Values[i] = math.Float32frombits(binary.LittleEndian.Uint32(bytes[4*i:]))
	}
	return nil
}

// FixtureQuery is one grounded query of the fixture with QE-ConE's cones of it.
type FixtureQuery struct {
	Name      string  `json:"name"`      // QE-ConE's name (2u-DNF, up-DM, ...) or the custom one's
	Type      string  `json:"type"`      // this project's type name
	Structure string  `json:"structure"` // the structure, in nested-tuple notation
	Flat      []int   `json:"flat"`      // QE-ConE's flattened query (-1 union, -2 negation)
	Anchors   []int32 `json:"anchors"`
	Relations []int32 `json:"relations"`
	Answers   []int32 `json:"answers"` // sorted; every one treated as hard
	Cones     struct {
		Axis Array `json:"axis"` // [branches][d]
		Half Array `json:"half"` // [branches][d] ConE's arg: the half-aperture
	} `json:"cones"`
}

// FixtureBatch is one training batch of the fixture: indices into Queries, with fixed
// positives, negatives, weights and the seeds of the dropout masks (model.DropoutKeep's),
// in the order the masks were drawn.
type FixtureBatch struct {
	Queries      []int            `json:"queries"`
	Positive     []int32          `json:"positive"`
	Negative     [][]int32        `json:"negative"`
	K            int              `json:"k"`
	Weight       []float64        `json:"weight"`
	DropoutSeeds []uint64         `json:"dropout_seeds"`
	Loss         float64          `json:"loss"`
	LossPos      float64          `json:"loss_pos"`
	LossNeg      float64          `json:"loss_neg"`
	Grads        map[string]Array `json:"grads"`
	LR           float64          `json:"lr"`
}

// OperatorCase is QE-ConE's ConeIntersection or ConeNegation on crafted inputs.
type OperatorCase struct {
	Branches int   `json:"branches"`
	N        int   `json:"n"`
	Axis     Array `json:"axis"` // intersection: [branches][n][d]
	Half     Array `json:"half"`
	OutAxis  Array `json:"out_axis"`
	OutHalf  Array `json:"out_half"`
}

// Fixture is testdata/reference/cone.json.
type Fixture struct {
	Config struct {
		NumEntities  int     `json:"num_entities"`
		NumRelations int     `json:"num_relations"`
		Dim          int     `json:"dim"`
		Hidden       int     `json:"hidden"`
		Gamma        float64 `json:"gamma"`
		CenterReg    float64 `json:"center_reg"`
		Drop         float64 `json:"drop"`
	} `json:"config"`
	Params            map[string]Array `json:"params"`
	Queries           []FixtureQuery   `json:"queries"`
	Scores            Array            `json:"scores"` // [queries][entities]
	Ranks             [][]int          `json:"ranks"`  // per query, its answers' filtered ranks, ascending
	IntersectionCases []OperatorCase   `json:"intersection_cases"`
	NegationCases     OperatorCase     `json:"negation_cases"`
	Update            FixtureBatch     `json:"update"`
	Adam              struct {
		LR      float64          `json:"lr"`
		Updates []FixtureBatch   `json:"updates"`
		Params  map[string]Array `json:"params"`
	} `json:"adam"`
}

// ReadFixture reads a fixture file made by make_fixtures.py.
func ReadFixture(path string) (*Fixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f Fixture
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// ModelConfig is the fixture model's configuration for the cone variant.
func (f *Fixture) ModelConfig() model.Config {
	c := f.Config
	return model.Config{Variant: model.ConE, NumEntities: c.NumEntities, NumRelations: c.NumRelations,
		Dim: c.Dim, Gamma: c.Gamma, CenterReg: c.CenterReg, Drop: c.Drop, ConeHidden: c.Hidden}
}

// SetParams copies named tensors (this project's names) into p, checking that every
// tensor of p is given with its shape.
func SetParams[T model.Float](p *model.Params[T], named map[string]Array) error {
	for _, t := range p.Tensors() {
		a, ok := named[t.Name]
		if !ok {
			return fmt.Errorf("tensor %s missing", t.Name)
		}
		if len(a.Values) != len(t.Data) {
			return fmt.Errorf("tensor %s has %d values (shape %v), the model's has %d (%d×%d)",
				t.Name, len(a.Values), a.Shape, len(t.Data), t.Rows, t.Cols)
		}
		for i, v := range a.Values {
			t.Data[i] = T(v)
		}
	}
	return nil
}

// Grounded returns the fixture's queries as grounded queries.
func (f *Fixture) Grounded() ([]query.Grounded, error) {
	out := make([]query.Grounded, len(f.Queries))
	var cache query.Cache
	for i, q := range f.Queries {
		s, err := cache.Parse(q.Structure)
		if err != nil {
			return nil, fmt.Errorf("fixture query %d (%s): %w", i, q.Name, err)
		}
		out[i] = query.Grounded{Structure: s, Anchors: q.Anchors, Relations: q.Relations}
		if err := out[i].Validate(f.Config.NumEntities, f.Config.NumRelations); err != nil {
			return nil, fmt.Errorf("fixture query %d (%s): %w", i, q.Name, err)
		}
	}
	return out, nil
}

// Batch builds the model batch of a fixture batch.
func (f *Fixture) Batch(b *FixtureBatch) (*model.Batch, error) {
	qs, err := f.Grounded()
	if err != nil {
		return nil, err
	}
	mb := &model.Batch{NumNegative: b.K, Positive: b.Positive, Weight: b.Weight}
	for i, q := range b.Queries {
		mb.Queries = append(mb.Queries, qs[q])
		if len(b.Negative[i]) != b.K {
			return nil, fmt.Errorf("fixture batch query %d has %d negatives, want %d", i, len(b.Negative[i]), b.K)
		}
		mb.Negative = append(mb.Negative, b.Negative[i]...)
	}
	return mb, nil
}

// SeedSource is a rand.Source that returns the given values in order: it hands the
// fixture's dropout seeds to model.Model (which draws one Uint64 per mask). It panics
// when they run out, since that means the masks are not drawn as the reference drew them.
type SeedSource struct {
	Seeds []uint64
	Next  int
}

// Uint64 returns the next seed.
func (s *SeedSource) Uint64() uint64 {
	if s.Next >= len(s.Seeds) {
		panic(fmt.Sprintf("qecone: more dropout masks drawn than the reference's %d", len(s.Seeds)))
	}
	v := s.Seeds[s.Next]
	s.Next++
	return v
}
