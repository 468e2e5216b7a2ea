package eval

import (
	"context"
	"errors"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

var errFakeDevice = errors.New("fake device: lost")

// deviceFailed computes like the reference kernels but reports a recorded device error
// (compute.DeferredErrors), as cuda.Backend does after falling back to the CPU.
type deviceFailed struct{ compute.Reference[float32] }

func (deviceFailed) Err() error { return errFakeDevice }

// TestRankQueriesReportsDeferredError: RankQueries returns the model's backend's recorded
// device error, on the host path (scores on the backend) and through a BatchRanker alike,
// instead of ranks computed on the CPU fallback; with the bare reference kernels the same
// call succeeds (the control).
func TestRankQueriesReportsDeferredError(t *testing.T) {
	cfg := model.Config{Variant: model.RoConE, NumEntities: 30, NumRelations: 4, Dim: 8, Gamma: 2, CenterReg: 0.2, Seed: 1}
	var qs []RankQuery
	for i := range 20 {
		qs = append(qs, RankQuery{Type: "1p", Hard: []int32{int32(i)},
			Query: query.Grounded{Structure: query.MustParse("('e',('r',))"), Anchors: []int32{int32(i + 1)}, Relations: []int32{int32(i % 4)}}})
	}
	for _, k := range []struct {
		name    string
		kernels compute.Backend
		fails   bool
	}{{"reference", compute.Reference[float32]{}, false}, {"failed device backend", deviceFailed{}, true}} {
		m, err := model.New[float32](cfg, k.kernels)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []RankOptions{{Batch: 4, Workers: 2}, {Batch: 4, Device: &hostRanker{m: m}}} {
			ranks, err := RankQueries(context.Background(), m, qs, opts)
			switch {
			case k.fails && !errors.Is(err, errFakeDevice):
				t.Errorf("%s, device %v: error %v, want the device error", k.name, opts.Device != nil, err)
			case k.fails && ranks != nil:
				t.Errorf("%s, device %v: ranks returned with the error", k.name, opts.Device != nil)
			case !k.fails && (err != nil || len(ranks) != len(qs)):
				t.Errorf("%s, device %v: %d ranks, error %v", k.name, opts.Device != nil, len(ranks), err)
			}
		}
	}
}
