package train

import (
	"encoding/json"
	"fmt"
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
		KGDigest: t.kg, TrainFingerprint: t.ts.fingerprint,
	}, Tensors: checkpoint.Tensors(t.params, t.adam.M, t.adam.V)}
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
		meta := artifact.TrainLogMeta{Dataset: t.cfg.Dataset, Model: t.cfg.Model, Config: t.cfg.JSON(), Timings: string(tm),
			KGDigest: t.kg, TrainFingerprint: t.ts.fingerprint}
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
