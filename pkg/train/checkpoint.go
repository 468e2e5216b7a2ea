package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
)

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
//	timings            cumulative seconds per phase (Timings), in checkpoints written
//	                   before they moved to the train log alone; now absent, so that
//	                   one configuration, seed and train file give the same bytes
//	adam_started       per tensor (Params.Tensors order), whether a backward pass has
//	                   reached it (Adam.Started); absent: all have
//	adam_lag           per tensor, the updates of the current optimiser it sat out
//	                   before that (Adam.Lag); absent: none
//	best               the best validation so far by Config.BestMetric and the
//	                   validations since without improvement (bestState); absent: none
//	                   yet, or no best asked for
//	pending_valid      a validation that an interruption cut short (the step after which
//	                   it runs and that step's learning rate, for the log): a resumed run
//	                   runs it first, as the uninterrupted run did; absent: none
//	trajectory         the digest of the steps done (trajectory.go), which a train log's
//	                   rows give back: metrics matches a --log with the ranked run by it
//	valid_digest       the valid queries' digest (artifact.QueriesDigest): a resume on
//	                   other valid queries is refused (--auto-resume starts afresh)
type state struct {
	EvalEvery        int                    `json:"eval_every"`
	EvalSlowed       bool                   `json:"eval_slowed"`
	DropoutRNG       []byte                 `json:"dropout_rng"`
	Loaders          map[string]loaderState `json:"loaders"`
	TrainQueries     int                    `json:"train_queries"`
	TrainFingerprint string                 `json:"train_fingerprint"`
	Timings          *Timings               `json:"timings,omitempty"` // older checkpoints' only
	// AdamStarted and AdamLag are Adam.Started and Adam.Lag (absent in checkpoints
	// written before them: every tensor started, no lag).
	AdamStarted []bool  `json:"adam_started,omitempty"`
	AdamLag     []int64 `json:"adam_lag,omitempty"`
	// Best and PendingValid: keep-best and early stopping (best.go), exact across resumes.
	Best         *bestState    `json:"best,omitempty"`
	PendingValid *pendingValid `json:"pending_valid,omitempty"`
	// Trajectory is the digest of the steps done (trajectory.go); absent in checkpoints
	// written before it was recorded, and in those resumed from one.
	Trajectory string `json:"trajectory,omitempty"`
	// ValidDigest is the valid queries' artifact.QueriesDigest; absent for a run without
	// --valid and in older checkpoints. A resume on other valid queries is refused.
	ValidDigest string `json:"valid_digest,omitempty"`
}

// pendingValid is a validation an interruption cut short: the one after Step, whose
// updates ran at learning rate LR.
type pendingValid struct {
	Step int     `json:"step"`
	LR   float64 `json:"lr"`
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

// checkpoint assembles the checkpoint artifact of the current state.
func (t *trainer) checkpoint() (*artifact.Checkpoint, error) {
	if err := t.upd.Download(true); err != nil {
		return nil, fmt.Errorf("reading the model from the device: %w", err)
	}
	st := state{
		EvalEvery:        t.sched.EvalEvery,
		EvalSlowed:       t.sched.EvalSlowed,
		Loaders:          map[string]loaderState{},
		TrainQueries:     len(t.ts.queries),
		TrainFingerprint: t.ts.fingerprint,
		AdamStarted:      t.adam.Started,
		AdamLag:          t.adam.Lag,
		Best:             t.best,
		PendingValid:     t.pending,
	}
	if !t.trajUnknown {
		st.Trajectory = t.traj.String()
	}
	st.ValidDigest = t.validDigest
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
		KGDigest: t.kg, TrainFingerprint: t.ts.fingerprint,
	}, Tensors: checkpoint.Tensors(t.params, t.adam.M, t.adam.V)}
	return ck, nil
}

// finished reports whether the run has nothing left to do: every step and its
// validation done, or stopped early.
func (t *trainer) finished() bool {
	return (t.stepsDone >= t.cfg.Steps && t.pending == nil) || t.cfg.stopped(t.best)
}

// destination is where the checkpoint of the current state goes: Options.Partial while
// the run is unfinished (when given), Options.Checkpoint once it is finished.
func (t *trainer) destination() string {
	if t.opts.Partial != "" && !t.finished() {
		return t.opts.Partial
	}
	return t.opts.Checkpoint
}

// save writes the train log, then the checkpoint, each atomically. In that order a crash
// between the two leaves a log ahead of the checkpoint, which a resumed run trims.
func (t *trainer) save() error { return t.persist(false, true) }

// persist writes, from one snapshot of the state, the best checkpoint (best) and the
// train log and checkpoint (checkpoint). The best goes first: a crash after it replays
// from an older checkpoint and writes it again, bit for bit, where the other order could
// leave a checkpoint that records a best never written. The finished run's checkpoint
// goes to Options.Checkpoint, after which Options.Partial is removed.
func (t *trainer) persist(best, checkpoint bool) error {
	if !best && !checkpoint {
		return nil
	}
	start := time.Now()
	ck, err := t.checkpoint()
	if err != nil {
		return err
	}
	if best {
		if err := artifact.WriteCheckpoint(t.opts.bestPath(), ck); err != nil {
			return fmt.Errorf("the best checkpoint: %w", err)
		}
		t.bestAt, t.bestMissing = t.opts.bestPath(), ""
	}
	if !checkpoint {
		t.timings.Checkpoint += time.Since(start).Seconds()
		return nil
	}
	if t.opts.Log != "" {
		tm, _ := json.Marshal(t.currentTimings())
		meta := artifact.TrainLogMeta{Dataset: t.cfg.Dataset, Model: t.cfg.Model, Config: t.cfg.JSON(), Timings: string(tm),
			KGDigest: t.kg, TrainFingerprint: t.ts.fingerprint}
		meta.Best, meta.EarlyStop = t.logBest()
		if err := artifact.WriteTrainLog(t.opts.Log, meta, t.log); err != nil {
			return err
		}
	}
	dest := t.destination()
	if err := artifact.WriteCheckpoint(dest, ck); err != nil {
		return err
	}
	if dest != t.opts.Partial && t.opts.Partial != "" {
		if err := os.Remove(t.opts.Partial); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the run is finished in %s; removing --partial %s: %w", dest, t.opts.Partial, err)
		}
	}
	t.savedSteps, t.written = t.stepsDone, dest
	t.timings.Checkpoint += time.Since(start).Seconds()
	if t.opts.AfterCheckpoint != nil {
		t.opts.AfterCheckpoint(t.stepsDone)
	}
	return nil
}

// logBest is the train log's best and early_stop metadata (JSON; "" for none).
func (t *trainer) logBest() (best, stop string) {
	if t.best == nil {
		return "", ""
	}
	b := map[string]any{"metric": t.cfg.BestMetric, "step": t.best.Step, "value": t.best.Value, "since": t.best.Since}
	js, _ := json.Marshal(b)
	best = string(js)
	if t.earlyStopped() {
		js, _ := json.Marshal(map[string]any{"step": t.stepsDone - 1, "patience": t.cfg.Patience,
			"metric": t.cfg.BestMetric, "best_step": t.best.Step, "best_value": t.best.Value})
		stop = string(js)
	}
	return best, stop
}

// CheckpointDiff returns the first difference between the training states that the
// checkpoints x and y hold ("" when they hold the same): every tensor bit for bit, every
// metadata key, and the state apart from the wall-clock timings that checkpoints written
// before they moved to the train log hold, which were all that two runs of the same
// trajectory (one interrupted and resumed, one not) wrote differently.
// A state that does not parse is an error.
func CheckpointDiff(x, y *artifact.Checkpoint) (string, error) {
	sx, err := withoutTimings(x.Meta.State)
	if err != nil {
		return "", fmt.Errorf("the first checkpoint: %w", err)
	}
	sy, err := withoutTimings(y.Meta.State)
	if err != nil {
		return "", fmt.Errorf("the second checkpoint: %w", err)
	}
	mx, my := x.Meta, y.Meta
	mx.State, my.State = "", ""
	if mx != my {
		return fmt.Sprintf("metadata %+v vs %+v", mx, my), nil
	}
	if sx != sy {
		return fmt.Sprintf("training state %s vs %s", sx, sy), nil
	}
	if len(x.Tensors) != len(y.Tensors) {
		return fmt.Sprintf("%d tensors vs %d", len(x.Tensors), len(y.Tensors)), nil
	}
	for i := range x.Tensors {
		p, q := &x.Tensors[i], &y.Tensors[i]
		if p.Name != q.Name || p.Role != q.Role || !slices.Equal(p.Shape, q.Shape) {
			return fmt.Sprintf("tensor %d: %s (%s) %v vs %s (%s) %v", i, p.Name, p.Role, p.Shape, q.Name, q.Role, q.Shape), nil
		}
		for j := range p.Values {
			if math.Float32bits(p.Values[j]) != math.Float32bits(q.Values[j]) {
				return fmt.Sprintf("tensor %s (%s), value %d: %v vs %v", p.Name, p.Role, j, p.Values[j], q.Values[j]), nil
			}
		}
	}
	return "", nil
}

// withoutTimings is the state JSON without its timings key, re-encoded (keys sorted;
// every other key kept, known to this version or not).
func withoutTimings(s string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", fmt.Errorf("training state: %w", err)
	}
	delete(m, "timings")
	b, err := json.Marshal(m)
	return string(b), err
}
