package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/compute/cuda/cudamodel"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
)

// Options are how a run is carried out; unlike Config, none of them changes what is
// computed.
type Options struct {
	Train      string // the train queries artifact (split train)
	Valid      string // a queries artifact to validate on; "" for none
	Checkpoint string // the checkpoint to write (and, with Resume, to read first)
	Log        string // the train log to write (and, with Resume, to continue); "" for none
	Resume     bool   // continue from Checkpoint, whose configuration the caller passes (see ResumeConfig)
	Config     string // the configuration file the caller read, if any: an input no output may overwrite
	// Overwrite lets a fresh run replace a checkpoint or train log of another run (another
	// configuration, or not such an artifact at all); without it that is an error.
	Overwrite bool

	Kernels compute.Kernels[float32] // the backend; nil: compute.Reference
	Workers int                      // goroutines for Adam and validation; 0: GOMAXPROCS

	// CUDA, if not nil, runs the updates on this device: the parameters, gradients and
	// Adam's moments live there (package cudamodel) and the host samples batches while the
	// device computes. Kernels then serves validation only. Checkpoints are the same
	// artifact on either device, so a run resumes across devices.
	CUDA *cuda.Device

	Progress      io.Writer     // progress lines; nil: none
	ProgressEvery time.Duration // between progress lines; 0: 5s

	// StopAfter, if positive, ends the run with a checkpoint once that many steps are
	// done, before Config.Steps: a partial run that a resumed one continues exactly.
	StopAfter int
	// AfterCheckpoint, if not nil, is called after each checkpoint is written, with the
	// number of steps it holds.
	AfterCheckpoint func(stepsDone int)
}

// Result is what a run did.
type Result struct {
	Config      Config
	StepsDone   int
	Interrupted bool          // ctx was cancelled: the checkpoint holds StepsDone steps
	Timings     Timings       // cumulative over resumed runs
	Valid       *eval.Summary // the last validation of this run, if any
}

// state is the JSON of a checkpoint's state key: the training state that the
// checkpoint's own metadata keys (step, lr, warm_up_steps, adam_step) and tensors do not
// hold.
//
//	eval_every         the current validation interval (after the ×4, if it happened)
//	eval_slowed        whether the ×4 at step 2·steps//3 has happened
//	dropout_rng        the dropout generator's PCG state (MarshalBinary, base64)
//	loaders            per pool ("path", "other"): queries (its size, to check the train
//	                   file), epoch (epochs completed), pos (next position in the epoch's
//	                   order, which is rebuilt from the seed, the pool and the epoch) and
//	                   rng (the sampler's PCG state)
//	train_queries      the number of train queries
//	train_fingerprint  FNV-64a of the train queries (ids, structures, ids, answers), so
//	                   that a resume on another train file is refused
//	timings            cumulative seconds per phase (Timings)
//	adam_started       per tensor (Params.Tensors order), whether a backward pass has
//	                   reached it (Adam.Started); absent: all have
//	adam_lag           per tensor, the updates of the current optimiser it sat out
//	                   before that (Adam.Lag); absent: none
type state struct {
	EvalEvery        int                    `json:"eval_every"`
	EvalSlowed       bool                   `json:"eval_slowed"`
	DropoutRNG       []byte                 `json:"dropout_rng"`
	Loaders          map[string]loaderState `json:"loaders"`
	TrainQueries     int                    `json:"train_queries"`
	TrainFingerprint string                 `json:"train_fingerprint"`
	Timings          Timings                `json:"timings"`
	// AdamStarted and AdamLag are Adam.Started and Adam.Lag (absent in checkpoints
	// written before them: every tensor started, no lag).
	AdamStarted []bool  `json:"adam_started,omitempty"`
	AdamLag     []int64 `json:"adam_lag,omitempty"`
}

// testHookBeforeUpdate, when set by a test, runs before every update.
var testHookBeforeUpdate func(step int, pool string, m *model.Model[float32])

type trainer struct {
	cfg     Config
	opts    Options
	workers int

	model         *model.Model[float32] // trains, on the timed kernels
	evalModel     *model.Model[float32] // the same parameters on the bare backend, for validation
	kernels       *timedKernels
	grads         *model.Grads[float32]
	params, gradT []model.Tensor[float32]
	adam          *Adam
	dev           *cudamodel.Model // the model on the GPU (Options.CUDA); nil on the CPU
	devStale      bool             // the host's parameters lag the device's
	sched         schedule
	dropSrc       *rand.PCG
	drop          *rand.Rand

	ts    *trainSet
	pools [2]*pool // path, other
	valid []eval.RankQuery

	log        []artifact.TrainLogRow
	entities   string // the KG's entity-table digest (artifact.QueriesMeta.EntitiesDigest)
	stepsDone  int
	savedSteps int // steps in the checkpoint on disk; -1: none written by this run or before

	timings      Timings // cumulative, except Total
	baseTotal    float64 // Total before this run
	sessionStart time.Time
}

// ReadCheckpointConfig returns the configuration a checkpoint was trained with and the
// number of steps it holds, without reading its tensors.
func ReadCheckpointConfig(path string) (Config, int, error) {
	meta, err := artifact.ReadCheckpointMeta(path)
	if err != nil {
		return Config{}, 0, err
	}
	c, err := ParseConfig(meta.Config)
	if err != nil {
		return c, 0, fmt.Errorf("%s: %w", path, err)
	}
	return c, int(meta.Step), nil
}

// Run trains a model with cfg (for a resumed run, the configuration ResumeConfig gives)
// and writes its checkpoint and train log. Every input is read and checked before
// anything is written. Cancelling ctx ends the run at the next step boundary with a
// checkpoint (Result.Interrupted). A NaN or infinite loss or parameter ends it with an
// error and without writing, so the last checkpoint on disk stays as it was.
func Run(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	t, err := setup(cfg, opts)
	if err != nil {
		return nil, err
	}
	if t.dev != nil {
		defer t.dev.Close()
	}
	return t.run(ctx)
}

// checkOutputs checks the checkpoint and the log before any work (outfile.Check): both
// writable, neither one of the inputs nor each other, both regular files (they are
// rewritten at every checkpoint and read back by --resume), so that a mistake is found
// at once, not at the first checkpoint hours later. With Resume, the checkpoint and log
// are inputs too by design, and are not compared with themselves.
func checkOutputs(opts Options) error {
	inputs := []outfile.Path{{Flag: "--train", Path: opts.Train}, {Flag: "--valid", Path: opts.Valid}, {Flag: "--config", Path: opts.Config}}
	return outfile.Check(inputs, []outfile.Path{
		{Flag: "--checkpoint", Path: opts.Checkpoint, File: true},
		{Flag: "--log", Path: opts.Log, File: true},
	})
}

func setup(cfg Config, opts Options) (*trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Checkpoint == "" {
		return nil, errors.New("no checkpoint path")
	}
	if cfg.SparseAdam && opts.CUDA != nil {
		return nil, errors.New("sparse Adam (--adam sparse) runs on the CPU only: the CUDA backend's optimiser is dense; use --device cpu or --adam dense")
	}
	if err := checkOutputs(opts); err != nil {
		return nil, err
	}
	t := &trainer{cfg: cfg, opts: opts, workers: opts.Workers, savedSteps: -1}
	if t.workers <= 0 {
		t.workers = runtime.GOMAXPROCS(0)
	}

	// The train file.
	tmeta, rows, err := artifact.ReadQueries(opts.Train)
	if err != nil {
		return nil, err
	}
	if err := tmeta.CheckWhole(opts.Train); err != nil {
		return nil, err
	}
	if tmeta.Split != "train" {
		return nil, fmt.Errorf("%s: a %s queries file; training needs a train file (split train)", opts.Train, tmeta.Split)
	}

	var ck *artifact.Checkpoint
	var st state
	if opts.Resume {
		if ck, err = artifact.ReadCheckpoint(opts.Checkpoint); err != nil {
			return nil, err
		}
		saved, err := ParseConfig(ck.Meta.Config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Checkpoint, err)
		}
		if err := sameTrajectory(saved, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Checkpoint, err)
		}
		if err := json.Unmarshal([]byte(ck.Meta.State), &st); err != nil {
			return nil, fmt.Errorf("%s: training state: %w", opts.Checkpoint, err)
		}
		if tmeta.Dataset != cfg.Dataset || tmeta.NumEntities != cfg.NumEntities || tmeta.NumRelations != cfg.NumRelations {
			return nil, fmt.Errorf("%s is from dataset %s (%d entities, %d relations); the checkpoint %s was trained on %s (%d entities, %d relations)",
				opts.Train, tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations, opts.Checkpoint, cfg.Dataset, cfg.NumEntities, cfg.NumRelations)
		}
	} else {
		if cfg.Dataset != "" && (cfg.Dataset != tmeta.Dataset || cfg.NumEntities != tmeta.NumEntities || cfg.NumRelations != tmeta.NumRelations) {
			return nil, fmt.Errorf("%s is from dataset %s (%d entities, %d relations), the configuration names %s (%d entities, %d relations)",
				opts.Train, tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations, cfg.Dataset, cfg.NumEntities, cfg.NumRelations)
		}
		cfg.Dataset, cfg.NumEntities, cfg.NumRelations = tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations
		t.cfg = cfg
		if err := checkOverwrite(cfg, opts); err != nil {
			return nil, err
		}
	}
	t.entities = tmeta.EntitiesDigest
	if ck != nil && ck.Meta.EntitiesDigest != "" {
		if t.entities != "" && t.entities != ck.Meta.EntitiesDigest {
			return nil, fmt.Errorf("%s names another entity table (digest %.12s) than the checkpoint %s was trained on (%.12s)",
				opts.Train, t.entities, opts.Checkpoint, ck.Meta.EntitiesDigest)
		}
		t.entities = ck.Meta.EntitiesDigest
	}
	if cfg.NumEntities <= 0 || cfg.NumRelations <= 0 {
		return nil, fmt.Errorf("%s: the KG has %d entities and %d relations", opts.Train, cfg.NumEntities, cfg.NumRelations)
	}
	if err := checkMemory(cfg); err != nil {
		return nil, err
	}
	ts, members, err := newTrainSet(rows, cfg.NumEntities, cfg.NumRelations)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Train, err)
	}
	if len(members[0])+len(members[1]) == 0 {
		return nil, fmt.Errorf("%s: no training queries", opts.Train)
	}
	t.ts = ts
	t.pools[0] = newPool(PoolPath, 0, members[0], cfg.Seed)
	t.pools[1] = newPool(PoolOther, 1, members[1], cfg.Seed)

	// The valid file.
	if opts.Valid != "" {
		vmeta, vrows, err := artifact.ReadQueries(opts.Valid)
		if err != nil {
			return nil, err
		}
		if err := vmeta.CheckWhole(opts.Valid); err != nil {
			return nil, err
		}
		if vmeta.Split == "train" {
			return nil, fmt.Errorf("%s: a train queries file; --valid needs held-out queries (split valid or test)", opts.Valid)
		}
		if vmeta.Dataset != cfg.Dataset {
			return nil, fmt.Errorf("%s is from dataset %s, but the model is trained on %s", opts.Valid, vmeta.Dataset, cfg.Dataset)
		}
		if vmeta.NumEntities != cfg.NumEntities || vmeta.NumRelations != cfg.NumRelations {
			return nil, fmt.Errorf("%s has %d entities and %d relations, the model %d and %d",
				opts.Valid, vmeta.NumEntities, vmeta.NumRelations, cfg.NumEntities, cfg.NumRelations)
		}
		if vmeta.EntitiesDigest != "" && t.entities != "" && vmeta.EntitiesDigest != t.entities {
			return nil, fmt.Errorf("%s names another entity table (digest %.12s) than %s (%.12s)", opts.Valid, vmeta.EntitiesDigest, opts.Train, t.entities)
		}
		if t.valid, err = eval.QueriesFromArtifact(vrows, cfg.NumEntities, cfg.NumRelations); err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Valid, err)
		}
	}

	// The model and optimiser.
	inner := opts.Kernels
	if inner == nil {
		inner = compute.Reference[float32]{}
	}
	t.kernels = &timedKernels{inner: inner}
	if ck != nil {
		if t.model, err = eval.ModelFromCheckpoint(ck, t.kernels); err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Checkpoint, err)
		}
		if t.model.Config != cfg.ModelConfig() {
			return nil, fmt.Errorf("%s: the model configuration %+v disagrees with the training configuration's %+v",
				opts.Checkpoint, t.model.Config, cfg.ModelConfig())
		}
	} else if t.model, err = model.New[float32](cfg.ModelConfig(), t.kernels); err != nil {
		return nil, err
	}
	// Validation scores with the bare backend, exactly as the rank stage will.
	if len(t.valid) > 0 {
		if t.evalModel, err = model.New[float32](t.model.Config, inner); err != nil {
			return nil, err
		}
		t.evalModel.Params = t.model.Params
	}
	t.grads = t.model.NewGrads()
	t.params = t.model.Params.Tensors()
	t.gradT = t.grads.Params.Tensors()
	t.adam = NewAdam(t.params, cfg.LR)
	t.adam.DeferStart() // from scratch; restore replaces it with the checkpoint's
	if opts.CUDA == nil {
		bufs := append(append([][]float32{}, t.adam.M...), t.adam.V...)
		for _, g := range t.gradT {
			bufs = append(bufs, g.Data)
		}
		prefault(t.workers, bufs...) // prefault.go: map them now, not update by update
	}
	t.sched = newSchedule(cfg)
	t.dropSrc = rand.NewPCG(cfg.Seed, streamDropout)
	t.drop = rand.New(t.dropSrc)
	if ck != nil {
		if err := t.restore(ck, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Checkpoint, err)
		}
		if opts.Log != "" {
			if err := t.continueLog(); err != nil {
				return nil, err
			}
		}
	}
	if opts.CUDA != nil {
		if t.dev, err = cudamodel.New(opts.CUDA, t.model, t.adam.LR); err != nil {
			return nil, fmt.Errorf("putting the model on %s: %w", opts.CUDA.Name(), err)
		}
		if t.adam.Step > 0 {
			if err := t.dev.SetAdam(t.adam.LR, int(t.adam.Step), t.adam.M, t.adam.V); err != nil {
				t.dev.Close()
				return nil, fmt.Errorf("putting the optimiser state on %s: %w", opts.CUDA.Name(), err)
			}
		}
	}
	return t, nil
}

// pull copies the device's parameters (and, with moments, Adam's state) to the host
// model, and checks that they are finite; a no-op on the CPU.
func (t *trainer) pull(moments bool) error {
	if t.dev == nil {
		return nil
	}
	var m, v [][]float32
	if moments {
		m, v = t.adam.M, t.adam.V
		t.adam.Step = int64(t.dev.AdamSteps())
	}
	if err := t.dev.Download(t.model.Params, m, v); err != nil {
		return err
	}
	for _, p := range t.params {
		for i, x := range p.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return &NonFiniteError{Tensor: p.Name, Index: i, Value: x}
			}
		}
	}
	return nil
}

// sameTrajectory checks that a resumed run's configuration equals the checkpoint's apart
// from the resumable keys.
func sameTrajectory(saved, cfg Config) error {
	probe := cfg
	for _, k := range ResumableKeys {
		v, _ := saved.Get(k)
		probe.Set(k, v)
	}
	if probe != saved {
		return fmt.Errorf("the run's configuration %s differs from the checkpoint's %s beyond %v", cfg.JSON(), saved.JSON(), ResumableKeys)
	}
	return nil
}

// restore loads the optimiser, schedule, generators and loaders from a checkpoint.
func (t *trainer) restore(ck *artifact.Checkpoint, st *state) error {
	m := &ck.Meta
	for i, p := range t.params {
		for _, r := range []struct {
			role string
			dst  []float32
		}{{artifact.RoleAdamM, t.adam.M[i]}, {artifact.RoleAdamV, t.adam.V[i]}} {
			src := ck.Tensor(p.Name, r.role)
			if src == nil {
				return fmt.Errorf("no %s tensor for %s", r.role, p.Name)
			}
			if len(src.Values) != len(r.dst) {
				return fmt.Errorf("%s tensor of %s has %d values, want %d", r.role, p.Name, len(src.Values), len(r.dst))
			}
			copy(r.dst, src.Values)
		}
	}
	t.adam.LR, t.adam.Step = m.LR, m.AdamStep
	t.adam.Started, t.adam.Lag = nil, nil
	if st.AdamStarted != nil {
		if len(st.AdamStarted) != len(t.params) || len(st.AdamLag) != len(t.params) {
			return fmt.Errorf("optimiser state for %d/%d tensors, the model has %d", len(st.AdamStarted), len(st.AdamLag), len(t.params))
		}
		t.adam.Started, t.adam.Lag = st.AdamStarted, st.AdamLag
	}
	t.sched = schedule{LR: m.LR, WarmUpSteps: m.WarmUpSteps, EvalEvery: t.cfg.EvalEvery, EvalSlowed: st.EvalSlowed}
	if st.EvalSlowed {
		t.sched.EvalEvery *= 4
	}
	if err := t.dropSrc.UnmarshalBinary(st.DropoutRNG); err != nil {
		return fmt.Errorf("dropout generator state: %w", err)
	}
	if st.TrainQueries != len(t.ts.queries) || st.TrainFingerprint != t.ts.fingerprint {
		return fmt.Errorf("%s is not the train file the checkpoint was trained on (%d queries, fingerprint %s; the checkpoint's: %d, %s)",
			t.opts.Train, len(t.ts.queries), t.ts.fingerprint, st.TrainQueries, st.TrainFingerprint)
	}
	for _, p := range t.pools {
		ls, ok := st.Loaders[p.name]
		if !ok {
			return fmt.Errorf("no loader state for the %s pool", p.name)
		}
		if err := p.restore(ls); err != nil {
			return err
		}
	}
	t.stepsDone = int(m.Step)
	t.savedSteps = t.stepsDone
	t.timings = st.Timings
	t.baseTotal = st.Timings.Total
	return nil
}

// continueLog reads the train log of a resumed run, keeping the rows of the steps the
// checkpoint holds. A missing log starts a new one.
func (t *trainer) continueLog() error {
	meta, rows, err := artifact.ReadTrainLog(t.opts.Log)
	if errors.Is(err, fs.ErrNotExist) {
		t.printf("train log %s not found; starting a new one\n", t.opts.Log)
		return nil
	}
	if err != nil {
		return err
	}
	if meta.Dataset != t.cfg.Dataset || meta.Model != t.cfg.Model {
		return fmt.Errorf("%s is the log of a %s model on %s, not of this checkpoint's %s model on %s",
			t.opts.Log, meta.Model, meta.Dataset, t.cfg.Model, t.cfg.Dataset)
	}
	if err := sameRunLog(t.opts.Log, meta, t.cfg); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Step < int64(t.stepsDone) {
			t.log = append(t.log, r)
		}
	}
	return nil
}

func (t *trainer) printf(format string, args ...any) {
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, format, args...)
	}
}

// run is the step loop (training.md §1–§3).
func (t *trainer) run(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	res := &Result{Config: cfg}
	t.sessionStart = time.Now()
	if t.stepsDone >= cfg.Steps {
		t.printf("the checkpoint already holds %d of %d steps; nothing to do\n", t.stepsDone, cfg.Steps)
		res.StepsDone, res.Timings = t.stepsDone, t.currentTimings()
		return res, nil
	}
	every := t.opts.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	first := t.stepsDone
	t.printf("training %s d=%d on %s: %d path and %d other train queries, steps %d to %d\n",
		cfg.Model, cfg.Dim, cfg.Dataset, len(t.pools[0].members), len(t.pools[1].members), first, cfg.Steps-1)
	lastPrint := time.Now()

	// The updates of a step: path, other, path; a single one when a pool is empty.
	var order []*pool
	switch {
	case len(t.pools[1].members) == 0:
		order = []*pool{t.pools[0]}
	case len(t.pools[0].members) == 0:
		order = []*pool{t.pools[1]}
	default:
		order = []*pool{t.pools[0], t.pools[1], t.pools[0]}
	}

	for s := t.stepsDone; s < cfg.Steps; s++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		t.sched.beforeStep(s, cfg.Steps)
		lr := t.sched.LR
		var sum, sumPath float64
		var nPath int
		lossOther := math.NaN()
		// The updates are enqueued first (on a GPU, the next batch is sampled while the
		// device runs the last one), then their losses read.
		pending := make([]func() (float64, error), len(order))
		for i, p := range order {
			var err error
			if pending[i], err = t.update(s, p); err != nil {
				return nil, err
			}
		}
		for i, p := range order {
			loss, err := pending[i]()
			if err != nil {
				return nil, err
			}
			sum += loss
			if p.index == 0 {
				sumPath += loss
				nPath++
			} else {
				lossOther = loss
			}
		}
		lossPath := math.NaN()
		if nPath > 0 {
			lossPath = sumPath / float64(nPath)
		}
		row := artifact.TrainLogRow{Step: int64(s), Kind: artifact.LogTrain, LR: lr,
			Loss: sum / float64(len(order)), LossPath: lossPath, LossOther: lossOther,
			MRR: math.NaN(), Hits1: math.NaN(), Hits3: math.NaN(), Hits10: math.NaN(),
			ElapsedS: t.elapsed()}
		t.log = append(t.log, row)

		if t.sched.afterStep(s) {
			t.adam.Reset(t.sched.LR)
			if t.dev != nil {
				if err := t.dev.ResetAdam(t.sched.LR); err != nil {
					return nil, fmt.Errorf("step %d: resetting Adam on the device: %w", s, err)
				}
			}
			t.printf("step %d: learning rate %.3g → %.3g, new Adam; next drop at the end of step %g\n", s, lr, t.sched.LR, math.Ceil(t.sched.WarmUpSteps))
		}
		if len(t.valid) > 0 && (t.sched.evalDue(s) || s == cfg.Steps-1) {
			sum, err := t.evaluate(ctx, s, lr)
			if err != nil && ctx.Err() != nil {
				res.Interrupted = true
			} else if err != nil {
				return nil, err
			} else {
				res.Valid = sum
			}
		}
		t.stepsDone = s + 1

		stop := t.opts.StopAfter > 0 && t.stepsDone >= t.opts.StopAfter
		if t.stepsDone == cfg.Steps || stop || res.Interrupted ||
			(cfg.CheckpointEvery > 0 && t.stepsDone%cfg.CheckpointEvery == 0) {
			if err := t.save(); err != nil {
				return nil, err
			}
		}
		if time.Since(lastPrint) >= every {
			lastPrint = time.Now()
			t.progressLine(s, first, row)
		}
		if stop || res.Interrupted {
			break
		}
	}
	if res.Interrupted && t.savedSteps != t.stepsDone {
		if err := t.save(); err != nil {
			return nil, err
		}
	}
	res.StepsDone, res.Timings = t.stepsDone, t.currentTimings()
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, "done: %d of %d steps; time spent:\n", t.stepsDone, cfg.Steps)
		res.Timings.Write(t.opts.Progress)
	}
	return res, nil
}

// update is one optimiser update on a batch of pool p during step s. It returns the
// update's loss as a function: on a GPU the update is only enqueued, and the function
// waits for it.
func (t *trainer) update(s int, p *pool) (func() (float64, error), error) {
	t0 := time.Now()
	batch := p.next(t.ts, t.cfg.Batch, t.cfg.Negatives)
	t1 := time.Now()
	t.timings.Sampling += t1.Sub(t0).Seconds()
	if testHookBeforeUpdate != nil {
		testHookBeforeUpdate(s, p.name, t.model)
	}
	// fail wraps err (%w: a *NonFiniteError stays visible to errors.As) with the step,
	// the pool and what became of the checkpoint.
	fail := func(err error) error {
		kept := "no checkpoint was written"
		if t.savedSteps >= 0 {
			kept = fmt.Sprintf("the last checkpoint, %s (%d steps), is left as it was", t.opts.Checkpoint, t.savedSteps)
		}
		return fmt.Errorf("step %d, %s-pool update: %w; stopping: %s", s, p.name, err, kept)
	}
	if err := t.reach(batch); err != nil {
		return nil, fmt.Errorf("step %d, %s-pool update: %w", s, p.name, err)
	}
	if t.dev != nil {
		t.devStale = true
		t.adam.next() // the host's count of the device's steps, per tensor
		if err := t.dev.SetAdamLags(t.adam.Lag); err != nil {
			return nil, fail(err)
		}
		pend, err := t.dev.Update(batch, t.drop)
		t.timings.Device += time.Since(t1).Seconds()
		if err != nil {
			return nil, fail(err)
		}
		return func() (float64, error) {
			start := time.Now()
			loss, _, _, err := pend.Wait()
			t.timings.Device += time.Since(start).Seconds()
			switch {
			case err != nil:
				return 0, fail(err)
			case math.IsNaN(loss) || math.IsInf(loss, 0):
				return 0, fail(fmt.Errorf("the loss is %v", loss))
			}
			return loss, nil
		}, nil
	}
	loss, err := t.updateCPU(s, p, batch, t1, fail)
	if err != nil {
		return nil, err // stop before the step's other updates run
	}
	return func() (float64, error) { return loss, nil }, nil
}

// reach tells Adam which tensors the batch's backward pass reaches (Adam.Reach).
func (t *trainer) reach(b *model.Batch) error {
	if t.adam.Started == nil {
		return nil
	}
	structures := make([]*query.Structure, len(b.Queries))
	for i := range b.Queries {
		structures[i] = b.Queries[i].Structure
	}
	reached, err := t.model.Reached(structures)
	if err != nil {
		return err
	}
	t.adam.Reach(reached)
	return nil
}

// updateCPU is update's CPU path: the loss and its gradients, then Adam.
func (t *trainer) updateCPU(s int, p *pool, batch *model.Batch, t1 time.Time, fail func(error) error) (float64, error) {

	lin0, dist0 := t.kernels.linear, t.kernels.distance
	tape, err := t.model.Loss(batch, t.drop)
	if err != nil {
		return 0, fmt.Errorf("step %d, %s-pool update: %w", s, p.name, err)
	}
	if math.IsNaN(tape.Loss) || math.IsInf(tape.Loss, 0) {
		return 0, fail(fmt.Errorf("the loss is %v", tape.Loss))
	}
	tape.Backward(t.grads)
	t2 := time.Now()
	if t.cfg.SparseAdam {
		err = t.adam.UpdateRows(t.params, t.gradT, TouchedRows(t.params, t.grads), t.workers) // adam_sparse.go
	} else {
		err = t.adam.Update(t.params, t.gradT, t.workers)
	}
	t.grads.Zero()
	t3 := time.Now()
	if err != nil {
		return 0, fail(err)
	}
	if err := compute.Err(t.kernels); err != nil { // a device backend's deferred error
		return 0, fail(err)
	}

	dist := (t.kernels.distance - dist0).Seconds()
	t.timings.Distance += dist
	t.timings.Linear += (t.kernels.linear - lin0).Seconds()
	t.timings.Embedding += t2.Sub(t1).Seconds() - dist
	t.timings.Optimizer += t3.Sub(t2).Seconds()
	return tape.Loss, nil
}

// evaluate validates after step s and logs the results.
func (t *trainer) evaluate(ctx context.Context, s int, lr float64) (*eval.Summary, error) {
	start := time.Now()
	if t.devStale {
		if err := t.pull(false); err != nil {
			return nil, fmt.Errorf("validation after step %d: reading the parameters from the device: %w", s, err)
		}
		t.devStale = false
	}
	opts := eval.RankOptions{Workers: t.workers}
	if t.dev != nil {
		// On the device, from the parameters there, as `rank --device cuda` does.
		opts.Device, opts.Batch = t.dev, 512
	}
	ranks, err := eval.RankQueries(ctx, t.evalModel, t.valid, opts)
	if err != nil {
		return nil, fmt.Errorf("validation after step %d: %w", s, err)
	}
	sum, err := eval.Summarize(t.valid, ranks)
	if err != nil {
		return nil, fmt.Errorf("validation after step %d: %w", s, err)
	}
	t.timings.Eval += time.Since(start).Seconds()
	elapsed := t.elapsed()
	add := func(typ string, queries int, m eval.Metrics) {
		t.log = append(t.log, artifact.TrainLogRow{Step: int64(s), Kind: artifact.LogValid, Type: typ, LR: lr,
			Loss: math.NaN(), LossPath: math.NaN(), LossOther: math.NaN(),
			MRR: m.MRR, Hits1: m.H1, Hits3: m.H3, Hits10: m.H10, Queries: int64(queries), ElapsedS: elapsed})
	}
	var all eval.Metrics
	total := 0
	for _, tr := range sum.Types {
		add(tr.Type, tr.Queries, tr.Metrics)
		all.MRR += tr.MRR
		all.H1 += tr.H1
		all.H3 += tr.H3
		all.H10 += tr.H10
		total += tr.Queries
	}
	if n := float64(len(sum.Types)); n > 0 {
		all = eval.Metrics{MRR: all.MRR / n, H1: all.H1 / n, H3: all.H3 / n, H10: all.H10 / n}
		add("AVG", total, all)
	}
	groups := []struct {
		name string
		g    eval.GroupAverage
	}{{"AVG-EPFO", sum.EPFO}, {"AVG-neg", sum.Negation}}
	for _, g := range groups {
		if g.g.Complete {
			n := 0
			for _, typ := range g.g.Types {
				tr, _ := sum.Type(typ)
				n += tr.Queries
			}
			add(g.name, n, g.g.Metrics)
		}
	}
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, "step %d: validation on %d queries (%.1fs): MRR %.2f", s, total, time.Since(start).Seconds(), 100*all.MRR)
		for _, tr := range sum.Types {
			fmt.Fprintf(t.opts.Progress, "  %s %.2f", tr.Type, 100*tr.MRR)
		}
		fmt.Fprintln(t.opts.Progress)
	}
	return &sum, nil
}

// elapsed is the training time so far, over resumed runs.
func (t *trainer) elapsed() float64 { return t.baseTotal + time.Since(t.sessionStart).Seconds() }

func (t *trainer) currentTimings() Timings {
	tm := t.timings
	tm.Total = t.elapsed()
	return tm
}

// progressLine prints step, loss, speed and ETA.
func (t *trainer) progressLine(s, first int, row artifact.TrainLogRow) {
	if t.opts.Progress == nil {
		return
	}
	done := s + 1 - first
	rate := float64(done) / time.Since(t.sessionStart).Seconds()
	eta := time.Duration(float64(t.cfg.Steps-s-1) / rate * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(t.opts.Progress, "step %d/%d  loss %.4f (path %.4f, other %.4f)  lr %.3g  %.2f steps/s  ETA %s\n",
		s, t.cfg.Steps, row.Loss, row.LossPath, row.LossOther, row.LR, rate, eta)
}

// checkpoint assembles the checkpoint artifact of the current state.
func (t *trainer) checkpoint() (*artifact.Checkpoint, error) {
	if t.dev != nil {
		if err := t.pull(true); err != nil {
			return nil, fmt.Errorf("reading the model from the device: %w", err)
		}
		t.devStale = false
	}
	tm := t.currentTimings()
	st := state{
		EvalEvery:        t.sched.EvalEvery,
		EvalSlowed:       t.sched.EvalSlowed,
		Loaders:          map[string]loaderState{},
		TrainQueries:     len(t.ts.queries),
		TrainFingerprint: t.ts.fingerprint,
		Timings:          tm,
		AdamStarted:      t.adam.Started,
		AdamLag:          t.adam.Lag,
	}
	var err error
	if st.DropoutRNG, err = t.dropSrc.MarshalBinary(); err != nil {
		return nil, err
	}
	for _, p := range t.pools {
		st.Loaders[p.name] = p.state()
	}
	stJSON, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	mcJSON, err := json.Marshal(t.model.Config)
	if err != nil {
		return nil, err
	}
	ck := &artifact.Checkpoint{Meta: artifact.CheckpointMeta{
		Model: t.cfg.Model, Dim: t.cfg.Dim, Dataset: t.cfg.Dataset,
		NumEntities: t.cfg.NumEntities, NumRelations: t.cfg.NumRelations,
		Step: int64(t.stepsDone), LR: t.sched.LR, WarmUpSteps: t.sched.WarmUpSteps, AdamStep: t.adam.Step,
		Config: t.cfg.JSON(), ModelConfig: string(mcJSON), State: string(stJSON), EntitiesDigest: t.entities,
	}}
	for i, p := range t.params {
		shape := []int64{int64(p.Rows), int64(p.Cols)}
		ck.Tensors = append(ck.Tensors,
			artifact.Tensor{Name: p.Name, Role: artifact.RoleParam, Shape: shape, Values: p.Data},
			artifact.Tensor{Name: p.Name, Role: artifact.RoleAdamM, Shape: shape, Values: t.adam.M[i]},
			artifact.Tensor{Name: p.Name, Role: artifact.RoleAdamV, Shape: shape, Values: t.adam.V[i]})
	}
	return ck, nil
}

// save writes the train log, then the checkpoint, each atomically. In that order a crash
// between the two leaves a log ahead of the checkpoint, which a resumed run trims.
func (t *trainer) save() error {
	start := time.Now()
	ck, err := t.checkpoint()
	if err != nil {
		return err
	}
	if t.opts.Log != "" {
		tm, _ := json.Marshal(t.currentTimings())
		meta := artifact.TrainLogMeta{Dataset: t.cfg.Dataset, Model: t.cfg.Model, Config: t.cfg.JSON(), Timings: string(tm)}
		if err := artifact.WriteTrainLog(t.opts.Log, meta, t.log); err != nil {
			return err
		}
	}
	if err := artifact.WriteCheckpoint(t.opts.Checkpoint, ck); err != nil {
		return err
	}
	t.savedSteps = t.stepsDone
	t.timings.Checkpoint += time.Since(start).Seconds()
	if t.opts.AfterCheckpoint != nil {
		t.opts.AfterCheckpoint(t.stepsDone)
	}
	return nil
}
