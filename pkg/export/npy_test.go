package export

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNPYGolden: WriteNPY writes, byte for byte, what numpy.save (NumPy 1.24.2) wrote
// for the same arrays (testdata/*.npy): the header, its padding to 64 bytes, the dtype
// names and the shapes, including an empty 2-D array and 1-D shapes.
func TestNPYGolden(t *testing.T) {
	for _, c := range []struct {
		file  string
		shape []int
		data  any
	}{
		{"f32_2x3.npy", []int{2, 3}, []float32{0, 1.5, -2, 3.25, math.Pi, float32(math.Copysign(0, -1))}},
		{"i64_3.npy", []int{3}, []int64{0, -1, 1 << 40}},
		{"i8_4.npy", []int{4}, []int8{0, 1, -1, 127}},
		{"i32_2.npy", []int{2}, []int32{7, -7}},
		{"f32_0x4.npy", []int{0, 4}, []float32{}},
		{"f32_1x1.npy", []int{1, 1}, []float32{0.5}},
	} {
		t.Run(c.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteNPY(&got, c.shape, c.data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("wrote\n%q\nnumpy.save wrote\n%q", got.Bytes(), want)
			}
		})
	}
}

// TestNPYLarge: data longer than the write buffer's chunk is written whole and in order,
// and the data starts on a 64-byte boundary.
func TestNPYLarge(t *testing.T) {
	n := 3*(1<<16) + 5
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i)
	}
	var b bytes.Buffer
	if err := WriteNPY(&b, []int{n}, data); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	off := len(raw) - 4*n
	if off%64 != 0 || off <= 10 {
		t.Fatalf("data at offset %d", off)
	}
	for i := 0; i < n; i += 9973 {
		bits := uint32(raw[off+4*i]) | uint32(raw[off+4*i+1])<<8 | uint32(raw[off+4*i+2])<<16 | uint32(raw[off+4*i+3])<<24
		if got := math.Float32frombits(bits); got != float32(i) {
			t.Fatalf("value %d is %v", i, got)
		}
	}
}

func TestNPYErrors(t *testing.T) {
	for _, c := range []struct {
		shape []int
		data  any
		want  string
	}{
		{[]int{2, 2}, []float32{1, 2, 3}, "npy: shape [2 2] holds 4 values, the data 3"},
		{[]int{-1}, []float32{}, "npy: negative dimension in shape [-1]"},
		{[]int{2}, []float64{1, 2}, "npy: unsupported element type []float64"},
		{[]int{1}, []string{"a"}, "npy: unsupported element type []string"},
	} {
		var b bytes.Buffer
		err := WriteNPY(&b, c.shape, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteNPY(%v, %T): %v, want %q", c.shape, c.data, err, c.want)
		}
		if b.Len() != 0 {
			t.Errorf("WriteNPY(%v, %T) wrote %d bytes before refusing", c.shape, c.data, b.Len())
		}
	}
}

// TestNPYHeaderPadding: for headers of every length modulo 64 (shapes of 1 to 40
// dimensions, the first of 1 to 4 digits), the header is the dict padded with spaces and
// ended by \n to the smallest multiple of 64 that holds it, as numpy.save pads, and its
// length field says so.
func TestNPYHeaderPadding(t *testing.T) {
	residues := map[int]bool{}
	for dims := 1; dims <= 40; dims++ {
		for _, first := range []int{7, 42, 365, 1000} {
			shape := []int{first}
			for range dims - 1 {
				shape = append(shape, 1)
			}
			h := npyHeader("<f4", shape)
			end := bytes.IndexByte(h, '}') + 1
			if end == 0 || !bytes.HasPrefix(h, []byte("\x93NUMPY\x01\x00")) {
				t.Fatalf("shape %v: header %q", shape, h)
			}
			need := end + 1 // the dict, then at least the \n
			residues[need%64] = true
			want := (need + 63) / 64 * 64
			if len(h) != want || h[len(h)-1] != '\n' || strings.Trim(string(h[end:len(h)-1]), " ") != "" {
				t.Errorf("shape %v: header of %d bytes %q, want %d: the dict padded with spaces and \\n", shape, len(h), h, want)
			}
			if hlen := int(binary.LittleEndian.Uint16(h[8:10])); hlen != len(h)-10 {
				t.Errorf("shape %v: header length field %d, want %d", shape, hlen, len(h)-10)
			}
		}
	}
	if len(residues) != 64 {
		t.Errorf("the shapes give %d of the 64 header lengths modulo 64", len(residues))
	}
}
