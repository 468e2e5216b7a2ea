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
