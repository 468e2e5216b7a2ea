package model

import (
	"sync"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/query"
)

// Model is a ConE or RoConE model: its configuration, parameters and the kernels that
// run its hot loops. It is generic over the element type so that the very code that
// trains in float32 is gradient-checked in float64.
//
// Forward passes only read the parameters, so several may run at once, each with its
// own Grads.
type Model[T Float] struct {
	Config  Config
	Params  *Params[T]
	Kernels compute.Kernels[T]

	mu    sync.Mutex
	plans map[string]*Plan // by structure notation
}

// New builds a model with parameters initialised from cfg.Seed. A nil kernels means
// compute.Reference. With cfg.Matmul TF32 the model's Kernels are kernels wrapped by
// compute.WithMatmul (the linear layers' factors rounded to TF32).
func New[T Float](cfg Config, kernels compute.Kernels[T]) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if kernels == nil {
		kernels = compute.Reference[T]{}
	}
	kernels = compute.WithMatmul(kernels, cfg.Matmul) // TF32 products: the factors rounded first
	p := NewParams[T](cfg)
	p.Init(cfg, cfg.Seed)
	return &Model[T]{Config: cfg, Params: p, Kernels: kernels, plans: map[string]*Plan{}}, nil
}

// NewGrads allocates zero gradients matching the model's parameters.
func (m *Model[T]) NewGrads() *Grads[T] { return NewGrads[T](m.Config) }

// Plan returns the compiled plan of a structure, compiling it on first use.
func (m *Model[T]) Plan(s *query.Structure) (*Plan, error) {
	key := s.String()
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.plans[key]; ok {
		return p, nil
	}
	p, err := Compile(s)
	if err != nil {
		return nil, err
	}
	m.plans[key] = p
	return p, nil
}

// embeddingRange is R in T.
func (m *Model[T]) embeddingRange() T { return T(m.Config.EmbeddingRange()) }
