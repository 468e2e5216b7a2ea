package train

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
)

// TestCheckRecorded: the keys a checkpoint's training configuration records for the stages
// that do not train (model, matmul, best_metric) must be values training writes, model and
// matmul the model's own; keys left out, and an empty configuration, pass.
func TestCheckRecorded(t *testing.T) {
	rocone := model.Config{Variant: model.RoConE}
	tf32 := model.Config{Variant: model.RoConE, Matmul: "tf32"}
	for _, tc := range []struct {
		name   string
		config string
		mc     model.Config
		err    string // a prefix; "" when accepted
	}{
		{"empty", "", rocone, ""},
		{"no keys", `{"dim": 8}`, rocone, ""},
		{"all agree", `{"model": "rocone", "matmul": "fp32", "best_metric": "hits@3:2p"}`, rocone, ""},
		{"fp32 spelled empty", `{"matmul": ""}`, rocone, ""},
		{"tf32", `{"matmul": "tf32"}`, tf32, ""},
		{"empty best metric", `{"best_metric": ""}`, rocone, ""},
		{"not JSON", `{"model": `, rocone, "training configuration: unexpected end of JSON input"},
		{"unknown model", `{"model": "beta"}`, rocone, `training configuration: unknown model variant "beta"`},
		{"another model", `{"model": "cone"}`, rocone, "training configuration: model cone, but the checkpoint holds a rocone model (model_config)"},
		{"unknown matmul", `{"matmul": "fp8"}`, rocone, `training configuration: matmul "fp8": want fp32 or tf32`},
		{"tf32 for an fp32 model", `{"matmul": "tf32"}`, rocone, "training configuration: matmul tf32, but the model's (model_config) is fp32"},
		{"fp32 for a tf32 model", `{"matmul": "fp32"}`, tf32, "training configuration: matmul fp32, but the model's (model_config) is tf32"},
		{"unknown best metric", `{"best_metric": "auc"}`, rocone, `training configuration: best-metric "auc": unknown measure "auc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRecorded(tc.config, tc.mc)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// TestConfigSet: Set takes a value of any Go type that converts to the field's without
// loss, canonicalises matmul and best_metric, and refuses the rest naming the key and the
// value as given.
func TestConfigSet(t *testing.T) {
	for _, tc := range []struct {
		key   string
		value any
		want  string // the field as JSON, in ParseConfig's form: `"key":value`
		err   string // exact; "" when accepted
	}{
		{"dim", 8, `"dim":8`, ""},
		{"dim", int64(-3), `"dim":-3`, ""}, // range checks are Validate's
		{"dim", uint8(9), `"dim":9`, ""},
		{"dim", uint64(math.MaxInt64), `"dim":9223372036854775807`, ""},
		{"dim", uint64(math.MaxInt64) + 1, "", "dim: 9223372036854775808 is too large"},
		{"dim", 12.0, `"dim":12`, ""},
		{"dim", float64(1 << 53), `"dim":9007199254740992`, ""},
		{"dim", float64(1<<53) * 2, "", "dim: want an integer, got 1.8014398509481984e+16"},
		{"dim", 12.5, "", "dim: want an integer, got 12.5"},
		{"dim", "8", "", `dim: want an integer, got the string "8"`},
		{"dim", true, "", "dim: want an integer, got true"},
		{"seed", 7, `"seed":7`, ""},
		{"seed", uint64(math.MaxUint64), `"seed":18446744073709551615`, ""},
		{"seed", -1, "", "seed: want a non-negative integer, got -1"},
		{"seed", -1.0, "", "seed: want an integer, got -1"},
		{"seed", 3.0, `"seed":3`, ""},
		{"lr", 0.5, `"lr":0.5`, ""},
		{"lr", float32(0.25), `"lr":0.25`, ""},
		{"lr", 2, `"lr":2`, ""},
		{"lr", uint(3), `"lr":3`, ""},
		{"lr", "0.1", "", `lr: want a number, got the string "0.1"`},
		{"model", "cone", `"model":"cone"`, ""},
		{"model", 1, "", "model: want a string, got 1"},
		{"sparse_adam", true, `"sparse_adam":true`, ""},
		{"sparse_adam", "true", "", `sparse_adam: want true or false, got the string "true"`},
		{"matmul", "tf32", `"matmul":"tf32"`, ""},
		{"matmul", "fp32", "", ""}, // canonically "", left out of the JSON
		{"matmul", 32, "", "matmul: want fp32 or tf32, got 32"},
		{"matmul", "fp16", "", `matmul "fp16": want fp32 or tf32`},
		{"best_metric", " MRR : 2p ", `"best_metric":"mrr:2p"`, ""},
		{"best_metric", "hits@1:AVG-neg", `"best_metric":"hits@1:neg"`, ""},
		{"best_metric", "hits@3", `"best_metric":"hits@3:epfo"`, ""},
		{"best_metric", 3, "", "best_metric: want a metric such as mrr:epfo, got 3"},
		{"no_such_key", 1, "", `unknown configuration key "no_such_key"`},
	} {
		t.Run(fmt.Sprintf("%s=%#v", tc.key, tc.value), func(t *testing.T) {
			c := Default()
			c.BestMetric = "mrr:neg"
			err := c.Set(tc.key, tc.value)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			js := c.JSON()
			if tc.want != "" && !strings.Contains(js, tc.want) {
				t.Fatalf("%s does not hold %s", js, tc.want)
			}
			if tc.key == "matmul" && tc.want == "" && strings.Contains(js, `"matmul"`) {
				t.Fatalf("%s: fp32 is recorded as the empty matmul, left out", js)
			}
		})
	}
	t.Run("empty best_metric clears it", func(t *testing.T) {
		c := Default()
		c.BestMetric = "mrr:neg"
		if err := c.Set("best_metric", ""); err != nil || c.BestMetric != "" {
			t.Fatalf("best_metric %q, err %v; want it cleared", c.BestMetric, err)
		}
	})
}

// TestBestMetricValue: each measure reads its own column of a validation row.
func TestBestMetricValue(t *testing.T) {
	row := artifact.TrainLogRow{MRR: 0.1, Hits1: 0.2, Hits3: 0.3, Hits10: 0.4}
	for measure, want := range map[string]float64{"mrr": 0.1, "hits@1": 0.2, "hits@3": 0.3, "hits@10": 0.4} {
		m, err := ParseBestMetric(measure + ":2p")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.value(row); got != want {
			t.Errorf("%s: %v, want %v", measure, got, want)
		}
	}
}
