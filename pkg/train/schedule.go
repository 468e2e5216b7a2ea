package train

// schedule is the reference's learning-rate and validation bookkeeping (docs/training.md §1,
// §3), kept in checkpoints:
//
//   - lr starts at Config.LR; warm_up_steps starts at Steps//2. At the end of step s, if
//     s ≥ warm_up_steps: lr ← lr/5, a brand-new Adam is created, warm_up_steps ← 1.5 ×
//     warm_up_steps (a float, as in Python: 150000 → 225000.0 → 337500.0).
//   - validation runs after step s when s > 0 and s % interval == 0; the interval starts
//     at Config.EvalEvery and is multiplied by 4 at the start of step 2·Steps//3.
type schedule struct {
	LR          float64
	WarmUpSteps float64
	EvalEvery   int  // the current validation interval; 0: never
	EvalSlowed  bool // the ×4 has happened
}

func newSchedule(c Config) schedule {
	return schedule{LR: c.LR, WarmUpSteps: float64(c.Steps / 2), EvalEvery: c.EvalEvery}
}

// beforeStep updates the bookkeeping at the start of step s of a run of maxSteps.
func (s *schedule) beforeStep(step, maxSteps int) {
	if step == 2*maxSteps/3 && !s.EvalSlowed {
		s.EvalEvery *= 4
		s.EvalSlowed = true
	}
}

// afterStep updates the bookkeeping at the end of step s and reports whether the learning
// rate dropped, in which case the optimiser must be recreated with the new s.LR.
func (s *schedule) afterStep(step int) bool {
	if float64(step) >= s.WarmUpSteps {
		s.LR /= 5
		s.WarmUpSteps *= 1.5
		return true
	}
	return false
}

// evalDue reports whether validation runs after step s.
func (s *schedule) evalDue(step int) bool {
	return s.EvalEvery > 0 && step > 0 && step%s.EvalEvery == 0
}
