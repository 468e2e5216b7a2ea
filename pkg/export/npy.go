package export

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The .npy format (NumPy's NEP 1, version 1.0): the magic "\x93NUMPY", the version
// bytes 1 0, a little-endian uint16 header length, then an ASCII Python dict literal
// {'descr': ..., 'fortran_order': False, 'shape': (...), } padded with spaces and ended by
// a newline so that the data starts on a 64-byte boundary, then the data in C order.
// It is written here, not with codeberg.org/sbinet/npyio: that library writes an empty
// slice with the shape () (which numpy refuses to load), cannot express a 2-D shape
// other than through a slice of slices, and writes element by element; the format is
// a few lines, and the tests compare these bytes with numpy.save's own.

// npyAlign is where the data starts: a multiple of 64 bytes, as numpy.save pads it (the
// format asks for 16 at least).
const npyAlign = 64

// WriteNPY writes data, a []float32, []int64, []int32 or []int8, as a C-order array of
// the given shape. The shape's product must be len(data).
func WriteNPY(w io.Writer, shape []int, data any) error {
	var descr string
	var n, size int
	switch v := data.(type) {
	case []float32:
		descr, n, size = "<f4", len(v), 4
	case []int64:
		descr, n, size = "<i8", len(v), 8
	case []int32:
		descr, n, size = "<i4", len(v), 4
	case []int8:
		descr, n, size = "|i1", len(v), 1
	default:
		return fmt.Errorf("npy: unsupported element type %T", data)
	}
	want := 1
	for _, s := range shape {
		if s < 0 {
			return fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		want *= s
	}
	if want != n {
		return fmt.Errorf("npy: shape %v holds %d values, the data %d", shape, want, n)
	}
	if _, err := w.Write(npyHeader(descr, shape)); err != nil {
		return err
	}
	// The data, little-endian, through a bounded buffer.
	const chunk = 1 << 16
	buf := make([]byte, 0, chunk*size)
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		buf = buf[:0]
		switch v := data.(type) {
		case []float32:
			for _, x := range v[lo:hi] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
		case []int64:
			for _, x := range v[lo:hi] {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(x))
			}
		case []int32:
			for _, x := range v[lo:hi] {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
			}
		case []int8:
			for _, x := range v[lo:hi] {
				buf = append(buf, byte(x))
			}
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// npyHeader is the magic, version, header length and padded header dict.
func npyHeader(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = strconv.Itoa(s)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	const prefix = 6 + 2 + 2 // magic, version, uint16 length
	total := prefix + len(dict) + 1
	total = (total + npyAlign - 1) / npyAlign * npyAlign
	hlen := total - prefix
	out := make([]byte, 0, total)
	out = append(out, "\x93NUMPY\x01\x00"...)
	out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	out = append(out, dict...)
	for len(out) < total-1 {
		out = append(out, ' ')
	}
	return append(out, '\n')
}
