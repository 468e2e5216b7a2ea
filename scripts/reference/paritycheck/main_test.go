package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSameConfig(t *testing.T) {
	var ref map[string]any
	if err := json.Unmarshal([]byte(`{"dim": 64, "hidden": 1600, "batch": 128, "negatives": 32, "gamma": 2.0,
		"center_reg": 1.0, "lr": 0.0003, "drop": 0.1, "steps": 300, "queries": "q.json", "num_queries": 11000}`), &ref); err != nil {
		t.Fatal(err)
	}
	const base = `"model":"cone","dim":64,"batch":128,"negatives":32,"gamma":2,"lr":0.0003,"lambda":1,"dropout":0.1,"steps":300,"seed":1`
	for _, c := range []struct {
		name, log string
		want      string // substring of the error; "" for none
	}{
		{"same", `{` + base + `,"cone_hidden":1600}`, ""},
		{"default width is 1600", `{` + base + `,"cone_hidden":0}`, ""},
		{"other width", `{` + base + `,"cone_hidden":128}`, "cone_hidden 128"},
		{"no width", `{` + base + `}`, `no numeric "cone_hidden"`},
		{"other lr", strings.Replace(`{`+base+`,"cone_hidden":1600}`, `"lr":0.0003`, `"lr":0.001`, 1), "lr 0.001"},
		{"other dropout", strings.Replace(`{`+base+`,"cone_hidden":1600}`, `"dropout":0.1`, `"dropout":0`, 1), "dropout 0"},
		{"other model", strings.Replace(`{`+base+`,"cone_hidden":1600}`, `"model":"cone"`, `"model":"rocone"`, 1), `model "rocone"`},
		{"not json", `{`, "train log config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := sameConfig(ref, c.log)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
