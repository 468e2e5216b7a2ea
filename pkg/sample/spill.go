package sample

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
)

// spill holds a shard's candidates on disk while it samples: its file's metadata records
// what the shard covered of every type, which is known only at the end, and an Arrow file
// writes its metadata first. The file is unlinked as soon as it is created, so that it
// disappears with the process however that ends (the signal handler of package outfile
// knows only outputs). It is a plain varint encoding, read back once, in order.
type spill struct {
	f     *os.File
	w     *bufio.Writer
	types []spillType
	index map[spillType]int
	rows  int
}

// spillType is the type and structure of a spilled row (one of the run's types).
type spillType struct{ typ, structure string }

// newSpill creates the spill file in dir ("" for the system's temporary directory,
// $TMPDIR).
func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "sample-shard-*.spill")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for the shard's candidates: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("a temporary file for the shard's candidates: %w", err)
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 1<<20), index: map[spillType]int{}}, nil
}

// add appends q: its type (an index into the types seen), attempt, and id lists.
func (s *spill) add(q *Query) error {
	t := spillType{q.Type, q.Structure.String()}
	k, ok := s.index[t]
	if !ok {
		k = len(s.types)
		s.index[t] = k
		s.types = append(s.types, t)
	}
	buf := make([]byte, 0, 16+binary.MaxVarintLen32*(2+len(q.Anchors)+len(q.Relations)+len(q.Easy)+len(q.Hard)))
	buf = binary.AppendUvarint(buf, uint64(k))
	buf = binary.AppendUvarint(buf, uint64(q.Attempt))
	for _, l := range [...][]int32{q.Anchors, q.Relations, q.Easy, q.Hard} {
		buf = binary.AppendUvarint(buf, uint64(len(l)))
		for _, v := range l {
			buf = binary.AppendUvarint(buf, uint64(uint32(v)))
		}
	}
	s.rows++
	_, err := s.w.Write(buf)
	return err
}

// each reads the rows back, in the order added, and calls fn with each (ids from 0).
func (s *spill) each(fn func(q *artifact.Query, attempt int64) error) error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("the shard's temporary file: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("the shard's temporary file: %w", err)
	}
	r := uvarints{r: bufio.NewReaderSize(s.f, 1<<20)}
	for id := 0; id < s.rows; id++ {
		k, attempt := r.next(), int64(r.next())
		if r.err == nil && k >= uint64(len(s.types)) {
			r.err = fmt.Errorf("type %d of %d: corrupt", k, len(s.types))
		}
		if r.err != nil {
			return fmt.Errorf("the shard's temporary file: row %d: %w", id, r.err)
		}
		q := artifact.Query{ID: int64(id), Type: s.types[k].typ, Structure: s.types[k].structure}
		for _, l := range [...]*[]int32{&q.Anchors, &q.Relations, &q.Easy, &q.Hard} {
			*l = make([]int32, r.next())
			for i := range *l {
				(*l)[i] = int32(uint32(r.next()))
			}
		}
		if r.err != nil {
			return fmt.Errorf("the shard's temporary file: row %d: %w", id, r.err)
		}
		if err := fn(&q, attempt); err != nil {
			return err
		}
	}
	return nil
}

// uvarints reads varints until the first error, which it keeps.
type uvarints struct {
	r   *bufio.Reader
	err error
}

func (u *uvarints) next() uint64 {
	if u.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(u.r)
	u.err = err
	return v
}

// close releases the file (already unlinked).
func (s *spill) close() error {
	return errors.Join(s.w.Flush(), s.f.Close())
}
