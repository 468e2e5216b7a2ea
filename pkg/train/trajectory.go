package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
)

// A run's trajectory is a running FNV-64a over the train rows of its steps in order:
// each step's number, learning rate and three losses, as bits. A checkpoint records it
// (its state's "trajectory"), and the train rows of a log give it back, so that a log can
// be matched with a checkpoint of its run: the configurations alone cannot tell a run
// resumed with another --steps (which a resume may change) from a run started with it,
// whose learning-rate schedule, and so losses, differ from the first drop on.
type trajectory uint64

// trajectoryStart is the digest of no step (FNV-64a's offset basis).
const trajectoryStart trajectory = 14695981039346656037

// add is the digest after one more step, the one of row.
func (h trajectory) add(row artifact.TrainLogRow) trajectory {
	bits := func(x float64) uint64 {
		if math.IsNaN(x) {
			x = math.NaN() // one NaN, whatever its payload: the other pool's loss where there is none
		}
		return math.Float64bits(x)
	}
	var b [48]byte
	for i, v := range []uint64{uint64(h), uint64(row.Step), bits(row.LR), bits(row.Loss), bits(row.LossPath), bits(row.LossOther)} {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	f := fnv.New64a()
	f.Write(b[:])
	return trajectory(f.Sum64())
}

func (h trajectory) String() string { return fmt.Sprintf("%016x", uint64(h)) }

func parseTrajectory(s string) (trajectory, error) {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil || len(s) != 16 {
		return 0, fmt.Errorf("trajectory %q: want 16 hexadecimal digits", s)
	}
	return trajectory(v), nil
}

// CheckpointTrajectory is the trajectory a checkpoint records, as "STEPS:DIGEST" (the
// steps it holds), for the artifacts made from it to carry; "" when it records none (a
// checkpoint written before trajectories were, or resumed from one, or imported).
func CheckpointTrajectory(meta artifact.CheckpointMeta) string {
	var st struct {
		Trajectory string `json:"trajectory"`
	}
	if err := json.Unmarshal([]byte(meta.State), &st); err != nil || st.Trajectory == "" {
		return ""
	}
	return fmt.Sprintf("%d:%s", meta.Step, st.Trajectory)
}

// MissingSteps describes the steps in [from, to) of which rows hold no train row: "step
// 20", "steps 20 to 29", "steps 20 to 29 and 35 to 39" (at most three ranges, then how
// many more); "" when none is missing. A log that lacks rows is incomplete: a resume that
// went on without it (--log "") leaves such a gap, which neither a resumed run's log nor
// metrics --log may pass over silently.
func MissingSteps(rows []artifact.TrainLogRow, from, to int64) string {
	var have []int64
	for _, r := range rows {
		if r.Kind == artifact.LogTrain && r.Step >= from && r.Step < to {
			have = append(have, r.Step)
		}
	}
	slices.Sort(have)
	have = slices.Compact(have)
	var gaps [][2]int64
	next := from // the first step not yet accounted for
	for _, s := range append(have, to) {
		if s > next {
			gaps = append(gaps, [2]int64{next, s - 1})
		}
		next = s + 1
	}
	if len(gaps) == 0 {
		return ""
	}
	if len(gaps) == 1 && gaps[0][0] == gaps[0][1] {
		return fmt.Sprintf("step %d", gaps[0][0])
	}
	var parts []string
	for _, g := range gaps[:min(len(gaps), 3)] {
		if g[0] == g[1] {
			parts = append(parts, strconv.FormatInt(g[0], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d to %d", g[0], g[1]))
		}
	}
	switch {
	case len(gaps) == 4:
		parts = append(parts, "1 more range")
	case len(gaps) > 4:
		parts = append(parts, fmt.Sprintf("%d more ranges", len(gaps)-3))
	}
	if len(parts) == 1 {
		return "steps " + parts[0]
	}
	return "steps " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// TrajectoryGap is MissingSteps of the steps a checkpoint's trajectory (CheckpointTrajectory's
// "STEPS:DIGEST") holds, for a log SameTrajectory does not match: "" when the log has a
// train row of each, so that it is another run's, not an incomplete log of this one.
func TrajectoryGap(rows []artifact.TrainLogRow, recorded string) string {
	stepsText, _, _ := strings.Cut(recorded, ":")
	steps, err := strconv.ParseInt(stepsText, 10, 64)
	if err != nil || steps <= 0 {
		return ""
	}
	return MissingSteps(rows, 0, steps)
}

// SameTrajectory reports whether a train log's train rows went the way that a
// checkpoint's trajectory (CheckpointTrajectory's "STEPS:DIGEST") records; why says how
// they do not. A log that lacks one of those steps cannot tell, and does not match.
func SameTrajectory(rows []artifact.TrainLogRow, recorded string) (ok bool, why string, err error) {
	stepsText, digest, found := strings.Cut(recorded, ":")
	steps, perr := strconv.ParseInt(stepsText, 10, 64)
	if !found || perr != nil || steps < 0 {
		return false, "", fmt.Errorf("checkpoint trajectory %q: want STEPS:DIGEST", recorded)
	}
	want, err := parseTrajectory(digest)
	if err != nil {
		return false, "", err
	}
	var train []artifact.TrainLogRow
	for _, r := range rows {
		if r.Kind == artifact.LogTrain && r.Step < steps {
			train = append(train, r)
		}
	}
	slices.SortStableFunc(train, func(a, b artifact.TrainLogRow) int { return int(a.Step - b.Step) })
	h := trajectoryStart
	for i, r := range train {
		if r.Step != int64(i) {
			return false, fmt.Sprintf("it lacks the train row of step %d of the %d the checkpoint holds", i, steps), nil
		}
		h = h.add(r)
	}
	if int64(len(train)) < steps {
		return false, fmt.Sprintf("it has train rows of %d of the %d steps the checkpoint holds", len(train), steps), nil
	}
	if h != want {
		return false, fmt.Sprintf("its first %d steps are not the checkpoint's (their learning rates or losses differ)", steps), nil
	}
	return true, "", nil
}
