package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

// setup checks a run's configuration and inputs and builds its trainer: the train and
// valid queries, the checkpoint it resumes (if any), the model, the optimiser and the
// updater of the CPU or the device. Nothing is written, and nothing said, unless every
// check passes.
func setup(cfg Config, opts Options) (_ *trainer, err error) {
	if err := checkOptions(cfg, opts); err != nil {
		return nil, err
	}
	release, err := checkOutputs(opts, cfg.KeepBest)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	t := &trainer{cfg: cfg, opts: opts, workers: opts.Workers, savedSteps: -1, release: release, traj: trajectoryStart}
	if t.workers <= 0 {
		t.workers = runtime.GOMAXPROCS(0)
	}
	// What setup has to say (--auto-resume's choice, replacing an earlier run's files, a
	// new train log) is said once every check has passed: a run that is refused announces
	// nothing it did not do (it said "starting a new run", then refused the checkpoint).
	progress, warnings := opts.Progress, opts.Warnings
	var said bytes.Buffer
	switch {
	case progress != nil:
		opts.Progress, t.opts.Progress = &said, &said
	case warnings != nil: // quiet: only warnf's lines are said
		opts.Warnings, t.opts.Warnings = &said, &said
	}
	defer func() {
		t.opts.Progress, t.opts.Warnings = progress, warnings
		w := progress
		if w == nil {
			w = warnings
		}
		if err == nil && w != nil {
			w.Write(said.Bytes())
		}
	}()

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
	if tmeta.NumEntities <= 0 || tmeta.NumRelations <= 0 {
		return nil, fmt.Errorf("%s: the KG has %d entities and %d relations", opts.Train, tmeta.NumEntities, tmeta.NumRelations)
	}
	ts, members, err := newTrainSet(rows, tmeta.NumEntities, tmeta.NumRelations)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Train, err)
	}
	if len(members[0])+len(members[1]) == 0 {
		return nil, fmt.Errorf("%s: no training queries", opts.Train)
	}

	// The valid file is read here, checked below: a run continues only on the valid
	// queries it validated on, which AutoResume needs to know.
	var vmeta artifact.QueriesMeta
	var vrows []artifact.Query
	if opts.Valid != "" {
		if vmeta, vrows, err = artifact.ReadQueries(opts.Valid); err != nil {
			return nil, err
		}
		if len(vrows) == 0 {
			// Every validation would measure nothing, and a best or an early stop would
			// be decided on no queries at all (rank refuses such a file too).
			return nil, fmt.Errorf("%s: no queries: a validation would measure nothing; give held-out queries, or leave --valid out", opts.Valid)
		}
		t.validDigest = artifact.QueriesDigest(vrows)
	}

	// Resume (or, with AutoResume, perhaps): from Partial when there is one.
	source := ResumeSource(opts)
	var ck *artifact.Checkpoint
	var st state
	if opts.AutoResume {
		var why string
		if ck, st, why, err = autoResume(cfg, source, tmeta, ts, t.validDigest); err != nil {
			return nil, err
		}
		if ck != nil {
			saved, _ := ParseConfig(ck.Meta.Config)
			saved.CheckpointEvery = cfg.CheckpointEvery
			cfg, t.cfg, opts.Resume, t.opts.Resume = saved, saved, true, true
		}
		t.printf("%s\n", why)
	} else if opts.Resume {
		if ck, err = artifact.ReadCheckpoint(source); err != nil {
			return nil, err
		}
		// train import-qecone records where the model came from: it holds no training
		// state (sampler, dropout and loader streams) to continue.
		var imp struct {
			From string `json:"imported_from"`
		}
		if json.Unmarshal([]byte(ck.Meta.State), &imp) == nil && imp.From != "" {
			return nil, fmt.Errorf("%s: an imported %s checkpoint cannot be resumed: it holds the model and Adam's moments but no training state (sampler, dropout and loader streams); use it with embed, rank and metrics, or train a new run", source, imp.From)
		}
		saved, err := ParseConfig(ck.Meta.Config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if err := sameTrajectory(saved, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if err := json.Unmarshal([]byte(ck.Meta.State), &st); err != nil {
			return nil, fmt.Errorf("%s: training state: %w", source, err)
		}
	}
	if opts.Resume {
		t.resumed = true
		if tmeta.Dataset != cfg.Dataset || tmeta.NumEntities != cfg.NumEntities || tmeta.NumRelations != cfg.NumRelations {
			return nil, fmt.Errorf("%s is from dataset %s (%d entities, %d relations); the checkpoint %s was trained on %s (%d entities, %d relations)",
				opts.Train, tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations, source, cfg.Dataset, cfg.NumEntities, cfg.NumRelations)
		}
	} else {
		if cfg.Dataset != "" && (cfg.Dataset != tmeta.Dataset || cfg.NumEntities != tmeta.NumEntities || cfg.NumRelations != tmeta.NumRelations) {
			return nil, fmt.Errorf("%s is from dataset %s (%d entities, %d relations), the configuration names %s (%d entities, %d relations)",
				opts.Train, tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations, cfg.Dataset, cfg.NumEntities, cfg.NumRelations)
		}
		cfg.Dataset, cfg.NumEntities, cfg.NumRelations = tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations
		t.cfg = cfg
		if err := checkOverwrite(cfg, opts, tmeta.KGDigest, ts.fingerprint); err != nil {
			return nil, err
		}
	}
	t.entities = tmeta.EntitiesDigest
	if ck != nil && ck.Meta.EntitiesDigest != "" {
		if t.entities != "" && t.entities != ck.Meta.EntitiesDigest {
			return nil, fmt.Errorf("%s names another entity table (digest %.12s) than the checkpoint %s was trained on (%.12s)",
				opts.Train, t.entities, source, ck.Meta.EntitiesDigest)
		}
		t.entities = ck.Meta.EntitiesDigest
	}
	t.kg = tmeta.KGDigest
	if ck != nil && ck.Meta.KGDigest != t.kg {
		return nil, fmt.Errorf("%s: queries of another KG (digest %.12s) than the one the checkpoint %s was trained on (%.12s), though dataset and counts agree",
			opts.Train, t.kg, source, ck.Meta.KGDigest)
	}
	if err := checkMemory(cfg); err != nil {
		return nil, err
	}
	t.ts = ts
	t.pools[0] = newPool(PoolPath, 0, members[0], cfg.Seed)
	t.pools[1] = newPool(PoolOther, 1, members[1], cfg.Seed)
	if cfg.BestMetric != "" {
		if t.metric, err = ParseBestMetric(cfg.BestMetric); err != nil {
			return nil, err
		}
	}

	if opts.Valid != "" {
		if err := t.checkValid(vmeta, vrows); err != nil {
			return nil, err
		}
	}

	// The model and optimiser.
	inner := opts.Kernels
	if inner == nil {
		inner = compute.Reference[float32]{}
	}
	t.kernels = &timedKernels{inner: inner}
	if ck != nil {
		if t.model, err = checkpoint.NewModel(ck, t.kernels); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if t.model.Config != cfg.ModelConfig() {
			return nil, fmt.Errorf("%s: the model configuration %+v disagrees with the training configuration's %+v",
				source, t.model.Config, cfg.ModelConfig())
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
	if opts.Device == nil {
		bufs := append(append([][]float32{}, t.adam.M...), t.adam.V...)
		for _, g := range t.gradT {
			bufs = append(bufs, g.Data)
		}
		prefault(t.workers, bufs...) // prefault.go: map them now, not update by update
		var tables [][]float32
		for _, p := range t.params {
			tables = append(tables, p.Data)
		}
		adviseHugePages(true, tables...) // hugepages_linux.go: the parameters, written already
	}
	boundGCHeadroom(3 * tensorBytes(t.params)) // gcpace.go: parameters and moments (and CPU gradients)
	t.sched = newSchedule(cfg)
	t.dropSrc = rand.NewPCG(cfg.Seed, streamDropout)
	t.drop = rand.New(t.dropSrc)
	if ck != nil {
		if err := t.restore(ck, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		t.written = source
		if t.cfg.KeepBest && t.best != nil {
			why, err := t.checkBestFile()
			if err != nil {
				return nil, err
			}
			if why == "" {
				t.bestAt = t.opts.bestPath()
			} else {
				t.bestMissing = why
				t.warnf("note: --best %s does not hold this run's best validation so far (%s %.4f after step %d): %s. "+
					"A copy of the checkpoint resumed under another name, or another --best, leaves the best where it was kept; "+
					"%s will hold the next better one\n", t.opts.bestPath(), t.cfg.BestMetric, t.best.Value, t.best.Step, why, t.opts.bestPath())
			}
		}
		if opts.Log != "" {
			if err := t.continueLog(); err != nil {
				return nil, err
			}
		}
	}
	host := Host{Model: t.model, Params: t.params, Adam: t.adam, Timings: &t.timings}
	if opts.Device == nil {
		t.upd = &cpuUpdater{Host: host, kernels: t.kernels, grads: t.grads, gradT: t.gradT, sparse: cfg.SparseAdam, workers: t.workers}
		return t, nil
	}
	if t.upd, err = opts.Device.Updater(host); err != nil {
		return nil, fmt.Errorf("putting the model on %s: %w", opts.Device.Name(), err)
	}
	if err := t.upd.RestoreAdam(); err != nil {
		t.upd.Close()
		return nil, fmt.Errorf("putting the optimiser state on %s: %w", opts.Device.Name(), err)
	}
	return t, nil
}

// checkOptions refuses a configuration, or a combination of options, that cannot run,
// before any file is touched.
func checkOptions(cfg Config, opts Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if opts.Checkpoint == "" {
		return errors.New("no checkpoint path")
	}
	if cfg.SparseAdam && opts.Device != nil {
		return errors.New("sparse Adam (--adam sparse) runs on the CPU only: the CUDA backend's optimiser is dense; use --device cpu or --adam dense")
	}
	if opts.Resume && opts.AutoResume {
		return errors.New("--resume continues the checkpoint, --auto-resume decides whether to: give one of them")
	}
	if opts.Train == "-" && opts.Valid == "-" {
		// Stdin holds one artifact: the second reader would find it empty, and say only that.
		return errors.New("--train and --valid cannot both read stdin: give one of them a FILE")
	}
	if (cfg.KeepBest || cfg.Patience > 0) && opts.Valid == "" {
		what := "--keep-best"
		if !cfg.KeepBest {
			what = fmt.Sprintf("--patience %d", cfg.Patience)
		}
		return fmt.Errorf("%s compares validations: give the held-out queries with --valid FILE", what)
	}
	if !cfg.KeepBest && opts.Best != "" {
		return fmt.Errorf("--best %s is where --keep-best writes the best checkpoint: give --keep-best with it", opts.Best)
	}
	return nil
}

// checkValid checks the valid queries against the train queries and the model (dataset,
// entity table, KG) and keeps them for validation.
func (t *trainer) checkValid(vmeta artifact.QueriesMeta, vrows []artifact.Query) (err error) {
	if err := vmeta.CheckWhole(t.opts.Valid); err != nil {
		return err
	}
	if vmeta.Split == "train" {
		return fmt.Errorf("%s: a train queries file; --valid needs held-out queries (split valid or test)", t.opts.Valid)
	}
	if vmeta.Dataset != t.cfg.Dataset {
		return fmt.Errorf("%s is from dataset %s, but the model is trained on %s", t.opts.Valid, vmeta.Dataset, t.cfg.Dataset)
	}
	if vmeta.NumEntities != t.cfg.NumEntities || vmeta.NumRelations != t.cfg.NumRelations {
		return fmt.Errorf("%s has %d entities and %d relations, the model %d and %d",
			t.opts.Valid, vmeta.NumEntities, vmeta.NumRelations, t.cfg.NumEntities, t.cfg.NumRelations)
	}
	if vmeta.EntitiesDigest != "" && t.entities != "" && vmeta.EntitiesDigest != t.entities {
		return fmt.Errorf("%s names another entity table (digest %.12s) than %s (%.12s)", t.opts.Valid, vmeta.EntitiesDigest, t.opts.Train, t.entities)
	}
	if vmeta.KGDigest != t.kg {
		return fmt.Errorf("%s: queries of another KG (digest %.12s) than %s (%.12s), though dataset and counts agree", t.opts.Valid, vmeta.KGDigest, t.opts.Train, t.kg)
	}
	if t.valid, err = eval.QueriesFromArtifact(vrows, t.cfg.NumEntities, t.cfg.NumRelations); err != nil {
		return fmt.Errorf("%s: %w", t.opts.Valid, err)
	}
	if t.cfg.BestMetric != "" {
		if err := t.metric.checkValid(t.valid, t.opts.Valid); err != nil {
			return err
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
	t.best, t.pending = st.Best, st.PendingValid
	if t.best != nil && t.cfg.BestMetric == "" {
		return fmt.Errorf("the training state holds a best validation but the configuration names no best metric")
	}
	if t.pending != nil && t.pending.Step != t.stepsDone-1 {
		return fmt.Errorf("the training state holds a validation of step %d still to run, but %d steps done", t.pending.Step, t.stepsDone)
	}
	if t.pending != nil && len(t.valid) == 0 {
		// Resumed without --valid (allowed unless the best is compared): no validation runs.
		t.printf("the validation after step %d was cut short; without --valid it is not run\n", t.pending.Step)
		t.pending = nil
	}
	switch {
	case st.ValidDigest == "":
	case t.validDigest == "":
		t.validDigest = st.ValidDigest // kept for the next resume, which may give --valid again
	case t.validDigest != st.ValidDigest:
		return fmt.Errorf("the run validated on other queries (digest %.12s) than --valid %s (%.12s): one log and one best would mix two validation sets; give the run's own --valid, or none",
			st.ValidDigest, t.opts.Valid, t.validDigest)
	}
	if st.Trajectory == "" {
		t.trajUnknown = true
	} else {
		traj, err := parseTrajectory(st.Trajectory)
		if err != nil {
			return err
		}
		t.traj = traj
	}
	if st.Timings != nil { // a checkpoint of before the timings moved to the log alone
		t.resumeTimings(*st.Timings)
	}
	return nil
}

// resumeTimings continues the timings a run recorded before it was resumed.
func (t *trainer) resumeTimings(tm Timings) {
	t.timings, t.baseTotal = tm, tm.Total
}

// continueLog reads the train log of a resumed run, keeping the rows of the steps the
// checkpoint holds. A missing log starts a new one, from the checkpoint's step, and says
// so. A log that lacks rows of the steps the checkpoint holds (from its first row on)
// is refused: the run went on without it (--log ""), and appending to it would leave a
// gap that nothing reading the log is told of. A log that goes on past the checkpoint
// (a crash between writing the log and the checkpoint, or an older checkpoint resumed)
// loses those rows, which the run writes again, and says so.
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
	if meta.KGDigest != t.kg || meta.TrainFingerprint != t.ts.fingerprint {
		return fmt.Errorf("%s is the log of a run on another KG or train file (KG %.12s, train file %s) than the checkpoint %s's (%.12s, %s); give another --log (or \"\" for none) to resume without it",
			t.opts.Log, meta.KGDigest, meta.TrainFingerprint, t.opts.Checkpoint, t.kg, t.ts.fingerprint)
	}
	first, last := int64(t.stepsDone), int64(-1) // the log's train steps
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			first, last = min(first, r.Step), max(last, r.Step)
		}
	}
	if gap := MissingSteps(rows, first, int64(t.stepsDone)); gap != "" {
		lastRow := "it has no train row"
		if last >= 0 {
			lastRow = fmt.Sprintf("its last is step %d", last)
		}
		return fmt.Errorf("%s lacks the train rows of %s of the %d steps the checkpoint %s holds (%s): the run went on without "+
			"this log (e.g. with --log \"\"), and continuing it would leave that gap; give --log \"\" to resume without a log, "+
			"or a new --log path to start one at step %d", t.opts.Log, gap, t.stepsDone, t.written, lastRow, t.stepsDone)
	}
	if last >= int64(t.stepsDone) {
		t.printf("train log %s goes on to step %d, past the %d steps of the checkpoint %s: its rows from step %d on are dropped, and written again as the run goes on\n",
			t.opts.Log, last, t.stepsDone, t.written, t.stepsDone)
	}
	for _, r := range rows {
		if r.Step < int64(t.stepsDone) {
			t.log = append(t.log, r)
		}
	}
	// The run's timings so far: the log is where they are kept (the checkpoint holds
	// none, so that its bytes do not depend on the clock).
	var tm Timings
	if err := json.Unmarshal([]byte(meta.Timings), &tm); err != nil {
		return fmt.Errorf("%s: timings: %w", t.opts.Log, err)
	}
	t.resumeTimings(tm)
	return nil
}

// ResumeSource is the checkpoint a resumed run reads: Options.Partial when it exists
// (an unfinished run keeps its checkpoints there), Options.Checkpoint otherwise.
func ResumeSource(opts Options) string {
	if opts.Partial != "" {
		if _, err := os.Stat(opts.Partial); err == nil {
			return opts.Partial
		}
	}
	return opts.Checkpoint
}

// autoResume decides Options.AutoResume: it returns the checkpoint at source and its
// state when it holds an unfinished run of cfg (every key the same but checkpoint_every;
// the KG's keys are the train file's) on this train file and validated on these valid
// queries (validDigest, "" for none given), and nil otherwise, with a line saying what it
// chose and why.
func autoResume(cfg Config, source string, tmeta artifact.QueriesMeta, ts *trainSet, validDigest string) (*artifact.Checkpoint, state, string, error) {
	var st state
	fresh := func(why string, args ...any) (*artifact.Checkpoint, state, string, error) {
		return nil, st, "starting a new run: " + fmt.Sprintf(why, args...), nil
	}
	if _, err := os.Stat(source); errors.Is(err, fs.ErrNotExist) {
		return fresh("no checkpoint at %s to continue", source)
	}
	meta, err := artifact.ReadCheckpointMeta(source)
	if err != nil {
		return fresh("%s is not a checkpoint to continue (%v)", source, err)
	}
	saved, err := ParseConfig(meta.Config)
	if err != nil {
		return fresh("%s: %v", source, err)
	}
	cfg.Dataset, cfg.NumEntities, cfg.NumRelations = tmeta.Dataset, tmeta.NumEntities, tmeta.NumRelations
	if diff := Diff(saved, cfg, "checkpoint_every"); len(diff) > 0 {
		return fresh("%s holds another run (%s)", source, strings.Join(diff, ", "))
	}
	if err := json.Unmarshal([]byte(meta.State), &st); err != nil {
		return fresh("%s: its training state does not read (%v)", source, err)
	}
	if st.TrainQueries != len(ts.queries) || st.TrainFingerprint != ts.fingerprint ||
		(meta.EntitiesDigest != "" && tmeta.EntitiesDigest != "" && meta.EntitiesDigest != tmeta.EntitiesDigest) {
		return fresh("%s was trained on other train queries", source)
	}
	if st.ValidDigest != "" && validDigest != "" && st.ValidDigest != validDigest {
		return fresh("%s was validated on other valid queries", source)
	}
	if (int(meta.Step) >= saved.Steps && st.PendingValid == nil) || saved.stopped(st.Best) {
		return fresh("%s holds this run finished (%d of %d steps)", source, meta.Step, saved.Steps)
	}
	ck, err := artifact.ReadCheckpoint(source)
	if err != nil {
		return nil, st, "", err
	}
	return ck, st, fmt.Sprintf("resuming %s: it holds %d of %d steps of this run", source, meta.Step, saved.Steps), nil
}
