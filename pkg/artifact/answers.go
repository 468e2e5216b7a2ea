package artifact

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// AnswersMeta is the schema metadata of an answers artifact: the top-K entities of
// questions asked by name (rank --ask), and what they were ranked with.
type AnswersMeta struct {
	Model          string
	Dataset        string
	NumEntities    int
	NumQuestions   int // questions asked, with or without rows
	Checkpoint     string
	CheckpointHash string
	TopK           int
	Known          string // the graph known answers come from: "train" or "train+valid"
	ExcludeKnown   bool   // known answers were left out of the top K
}

// Answer is one row: one of a question's K best entities.
type Answer struct {
	Question     int32  // the question's index, 0-based, in the order asked
	Query        string // the question as written
	Grounded     string // its ids (query.Grounded's notation)
	Type         string // its structure's type name, or custom
	Position     int32  // 1-based position in the question's top K
	Entity       int32
	Name         string // "" when the KG names no entities
	Label        string // "" when it has no label
	Score        float32
	Known        bool  // an answer of the query on the Known graph
	KnownAnswers int32 // how many answers the question has on the Known graph
}

func answersSpec() *spec {
	return &spec{kind: "answers", version: 1, fields: []arrow.Field{
		{Name: "question", Type: arrow.PrimitiveTypes.Int32},
		{Name: "query", Type: arrow.BinaryTypes.String},
		{Name: "grounded", Type: arrow.BinaryTypes.String},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "position", Type: arrow.PrimitiveTypes.Int32},
		{Name: "entity", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "label", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float32},
		{Name: "known", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "known_answers", Type: arrow.PrimitiveTypes.Int32},
	}}
}

func (m AnswersMeta) values() map[string]string {
	return map[string]string{
		"model": m.Model, "dataset": m.Dataset, "num_entities": strconv.Itoa(m.NumEntities), "num_questions": strconv.Itoa(m.NumQuestions),
		"checkpoint": m.Checkpoint, "checkpoint_sha256": m.CheckpointHash, "top_k": strconv.Itoa(m.TopK),
		"known": m.Known, "exclude_known": strconv.FormatBool(m.ExcludeKnown),
	}
}

// AnswersWriter writes an answers artifact row by row.
type AnswersWriter struct {
	t    *tableWriter
	meta AnswersMeta
}

// CreateAnswers starts an answers artifact at path ("-" for a stream on stdout).
func CreateAnswers(path string, meta AnswersMeta) (*AnswersWriter, error) {
	t, err := createTable(path, answersSpec(), meta.values())
	if err != nil {
		return nil, err
	}
	return &AnswersWriter{t: t, meta: meta}, nil
}

// Write appends one row, checking it against the metadata.
func (w *AnswersWriter) Write(a *Answer) error {
	if err := w.t.usable(); err != nil {
		return err
	}
	if err := w.meta.check(a); err != nil {
		return fmt.Errorf("%s: %w", w.t.name, err)
	}
	w.t.field(0).(*array.Int32Builder).Append(a.Question)
	w.t.field(1).(*array.StringBuilder).Append(a.Query)
	w.t.field(2).(*array.StringBuilder).Append(a.Grounded)
	w.t.field(3).(*array.StringBuilder).Append(a.Type)
	w.t.field(4).(*array.Int32Builder).Append(a.Position)
	w.t.field(5).(*array.Int32Builder).Append(a.Entity)
	w.t.field(6).(*array.StringBuilder).Append(a.Name)
	w.t.field(7).(*array.StringBuilder).Append(a.Label)
	w.t.field(8).(*array.Float32Builder).Append(a.Score)
	w.t.field(9).(*array.BooleanBuilder).Append(a.Known)
	w.t.field(10).(*array.Int32Builder).Append(a.KnownAnswers)
	return w.t.rowDone()
}

// check is what a writer and a reader both require of a row.
func (m AnswersMeta) check(a *Answer) error {
	switch {
	case a.Question < 0 || int(a.Question) >= m.NumQuestions:
		return fmt.Errorf("question %d out of range [0,%d)", a.Question, m.NumQuestions)
	case a.Position < 1 || int(a.Position) > m.TopK:
		return fmt.Errorf("question %d: position %d out of range [1,%d]", a.Question, a.Position, m.TopK)
	case a.Entity < 0 || int(a.Entity) >= m.NumEntities:
		return fmt.Errorf("question %d: entity %d out of range [0,%d)", a.Question, a.Entity, m.NumEntities)
	case a.KnownAnswers < 0 || int(a.KnownAnswers) > m.NumEntities:
		return fmt.Errorf("question %d: %d known answers for %d entities", a.Question, a.KnownAnswers, m.NumEntities)
	case m.ExcludeKnown && a.Known:
		return fmt.Errorf("question %d: entity %d is a known answer, but known answers are excluded", a.Question, a.Entity)
	case a.Score != a.Score:
		return fmt.Errorf("question %d: entity %d has a NaN score", a.Question, a.Entity)
	}
	return nil
}

// Close completes the artifact.
func (w *AnswersWriter) Close() error { return w.t.close() }

// Abort abandons it; a no-op after Close.
func (w *AnswersWriter) Abort() { w.t.abort() }

// ReadAnswers reads a whole answers artifact ("-" for stdin).
func ReadAnswers(path string) (AnswersMeta, []Answer, error) {
	var m AnswersMeta
	var rows []Answer
	specFor := func(name string, md arrow.Metadata) (*spec, error) {
		if err := kindIs(name, md, "answers"); err != nil {
			return nil, err
		}
		var err error
		for key, dst := range map[string]*int{"num_entities": &m.NumEntities, "num_questions": &m.NumQuestions, "top_k": &m.TopK} {
			if *dst, err = metaCount(name, md, key); err != nil {
				return nil, err
			}
		}
		for key, dst := range map[string]*string{"model": &m.Model, "dataset": &m.Dataset, "checkpoint": &m.Checkpoint,
			"checkpoint_sha256": &m.CheckpointHash, "known": &m.Known} {
			if *dst, err = metaString(name, md, key); err != nil {
				return nil, err
			}
		}
		ex, err := metaString(name, md, "exclude_known")
		if err != nil {
			return nil, err
		}
		if m.ExcludeKnown, err = strconv.ParseBool(ex); err != nil {
			return nil, fmt.Errorf("%s: schema metadata exclude_known=%q is not true or false", name, ex)
		}
		return answersSpec(), nil
	}
	err := readTable(path, specFor, func(rec arrow.Record, first int64) error {
		q := rec.Column(0).(*array.Int32).Int32Values()
		query, grounded, typ := rec.Column(1).(*array.String), rec.Column(2).(*array.String), rec.Column(3).(*array.String)
		pos, ent := rec.Column(4).(*array.Int32).Int32Values(), rec.Column(5).(*array.Int32).Int32Values()
		name, label := rec.Column(6).(*array.String), rec.Column(7).(*array.String)
		score := rec.Column(8).(*array.Float32).Float32Values()
		known := rec.Column(9).(*array.Boolean)
		nknown := rec.Column(10).(*array.Int32).Int32Values()
		for i := range q {
			a := Answer{Question: q[i], Query: query.Value(i), Grounded: grounded.Value(i), Type: typ.Value(i), Position: pos[i], Entity: ent[i],
				Name: name.Value(i), Label: label.Value(i), Score: score[i], Known: known.Value(i), KnownAnswers: nknown[i]}
			if err := m.check(&a); err != nil {
				return fmt.Errorf("row %d: %w", first+int64(i), err)
			}
			rows = append(rows, a)
		}
		return nil
	})
	if err != nil {
		return AnswersMeta{}, nil, err
	}
	return m, rows, nil
}
