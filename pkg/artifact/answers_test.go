package artifact

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var testAnswersMeta = AnswersMeta{Model: "rocone", Dataset: "tiny", NumEntities: 9, NumQuestions: 2, Checkpoint: "m.arrow",
	CheckpointHash: "ab", TopK: 2, Known: "train"}

var testAnswers = []Answer{
	{Question: 0, Query: "(ent1,(+rel0,))", Grounded: "(1,(0,))", Type: "1p", Position: 1, Entity: 4, Name: "ent4", Score: 3.5, Known: true, KnownAnswers: 1},
	{Question: 0, Query: "(ent1,(+rel0,))", Grounded: "(1,(0,))", Type: "1p", Position: 2, Entity: 2, Name: "ent2", Label: "Two", Score: -1, KnownAnswers: 1},
	{Question: 1, Query: "(('a b',(r,)),(c,(s,n)))", Grounded: "((0,(2,)),(3,(4,-2)))", Type: "2in", Position: 1, Entity: 8, Score: 0.25},
}

func TestAnswersRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.arrow")
	w, err := CreateAnswers(path, testAnswersMeta)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range testAnswers {
		if err := w.Write(&a); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, rows, err := ReadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta != testAnswersMeta || !reflect.DeepEqual(rows, testAnswers) {
		t.Errorf("read back %+v\n%+v", meta, rows)
	}
}

func TestAnswersRefused(t *testing.T) {
	excl := testAnswersMeta
	excl.ExcludeKnown = true
	for _, tc := range []struct {
		meta AnswersMeta
		row  Answer
		want string
	}{
		{testAnswersMeta, Answer{Question: 2, Position: 1}, "question 2 out of range [0,2)"},
		{testAnswersMeta, Answer{Position: 3}, "position 3 out of range [1,2]"},
		{testAnswersMeta, Answer{Position: 1, Entity: 9}, "entity 9 out of range [0,9)"},
		{testAnswersMeta, Answer{Position: 1, KnownAnswers: -1}, "-1 known answers"},
		{excl, Answer{Position: 1, Known: true}, "known answers are excluded"},
		{testAnswersMeta, Answer{Question: -1, Position: 1}, "question -1 out of range [0,2)"},
		{testAnswersMeta, Answer{Position: 0}, "position 0 out of range [1,2]"},
		{testAnswersMeta, Answer{Position: 1, Entity: -1}, "entity -1 out of range [0,9)"},
		{testAnswersMeta, Answer{Position: 1, KnownAnswers: 10}, "10 known answers for 9 entities"},
		{testAnswersMeta, Answer{Position: 1, Score: float32(math.NaN())}, "entity 0 has a NaN score"},
		// Accepted: every bound at its lowest, then at its highest.
		{excl, Answer{Position: 1}, ""},
		{testAnswersMeta, Answer{Question: 1, Position: 2, Entity: 8, KnownAnswers: 9, Known: true}, ""},
	} {
		path := filepath.Join(t.TempDir(), "a.arrow")
		w, err := CreateAnswers(path, tc.meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&tc.row); tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.row, err, tc.want)
		}
		w.Abort()
	}
}
