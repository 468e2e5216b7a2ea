package picklescan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata pickles are one value written by Python 3 at each protocol, 0 to 5:
//
//	v = {'easy': [(1, 2.5, -3), ('s', 'é')], 'big': 2**70, 'neg': -2**40, 'b': b'xy',
//	     'ba': bytearray(b'z'), 'set': {1}, 'fs': frozenset([2]), 'n': None, 't': True, 'f': False}
//	for p in range(6): open(f'proto{p}.pickle', 'wb').write(pickle.dumps(v, protocol=p))
//
// Between them they use 50 of the 68 opcodes, lines, 1-, 4- and 8-byte lengths and frames.
func pythonPickles(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("testdata/proto*.pickle")
	if err != nil || len(paths) != 6 {
		t.Fatalf("want the 6 testdata pickles, got %v (%v)", paths, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

func TestScanAcceptsPythonPickles(t *testing.T) {
	for name, data := range pythonPickles(t) {
		if err := Scan(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// A pickle ends at its STOP: what follows is not read.
		if err := Scan(append(bytes.Clone(data), 0xff, 0xff)); err != nil {
			t.Errorf("%s with trailing bytes: %v", name, err)
		}
	}
}

// Every proper prefix of a pickle is refused: it is cut either inside an argument, which
// must not be read past the end, or between opcodes, before the STOP.
func TestScanRefusesEveryPrefix(t *testing.T) {
	for name, data := range pythonPickles(t) {
		for n := range len(data) {
			if err := Scan(data[:n]); err == nil {
				t.Errorf("%s cut to %d of %d bytes: accepted", name, n, len(data))
			}
		}
	}
}

func TestScanRefuses(t *testing.T) {
	u32 := func(n uint32) string { return string(binary.LittleEndian.AppendUint32(nil, n)) }
	u64 := func(n uint64) string { return string(binary.LittleEndian.AppendUint64(nil, n)) }
	proto := "\x80\x04"
	for _, c := range []struct {
		name, pickle, want string
	}{
		{"empty", "", "truncated: the pickle ends after 0 bytes without its STOP"},
		{"no STOP", proto + "N", "truncated: the pickle ends after 3 bytes without its STOP"},
		{"unknown opcode", proto + "\x99.", "unknown opcode 0x99 at byte 2"},
		{"SHORT_BINUNICODE past the end", proto + "\x8c\x05abc.", "SHORT_BINUNICODE (opcode 0x8c) at byte 2: declares 5 bytes, but only 4 follow"},
		{"SHORT_BINBYTES past the end", proto + "C\x09.", "SHORT_BINBYTES (opcode 0x43) at byte 2: declares 9 bytes"},
		{"LONG1 past the end", proto + "\x8a\x02\x01", "LONG1 (opcode 0x8a) at byte 2: declares 2 bytes, but only 1 follow"},
		{"SHORT_BINUNICODE up to the end, no STOP", proto + "\x8c\x03abc", "truncated: the pickle ends after 7 bytes without its STOP"},
		{"BINUNICODE up to the end, no STOP", proto + "X" + u32(2) + "ab", "truncated: the pickle ends after 9 bytes without its STOP"},
		{"BINUNICODE of 4 GiB", proto + "X" + u32(0xffffffff) + "ab.", "declares 4294967295 bytes, but only 3 follow"},
		{"BINBYTES of 2 GiB", proto + "B" + u32(1<<31) + ".", "declares 2147483648 bytes"},
		{"BINSTRING of negative length", proto + "T" + u32(0xfffffffe) + ".", "BINSTRING (opcode 0x54) at byte 2: declares a negative length -2"},
		{"LONG4 of negative length", proto + "\x8b" + u32(0x80000000) + ".", "declares a negative length -2147483648"},
		{"LONG4 of 1,787 bytes", proto + "\x8b" + u32(1787) + strings.Repeat("\x01", 1787) + ".", "LONG4 (opcode 0x8b) at byte 2: an integer of 1787 bytes; at most 1786 are read"},
		{"LONG4 of 1 GiB", proto + "\x8b" + u32(1<<30) + ".", "an integer of 1073741824 bytes"},
		{"LONG of 4,301 digits", "L" + strings.Repeat("9", 4301) + "\n.", "LONG (opcode 0x4c) at byte 0: an integer of 4301 digits; at most 4300 are read"},
		{"LONG of 4,301 digits, signed, Python 2's L", "L-" + strings.Repeat("9", 4301) + "L\n.", "an integer of 4301 digits"},
		{"BINUNICODE8 of 2^63", proto + "\x8d" + u64(1<<63) + ".", "declares 9223372036854775808 bytes, but only 1 follow"},
		{"BINBYTES8 of 2^64-1", proto + "\x8e" + u64(^uint64(0)) + ".", "declares 18446744073709551615 bytes"},
		{"BYTEARRAY8 one too long", proto + "\x96" + u64(4) + "ab.", "BYTEARRAY8 (opcode 0x96) at byte 2: declares 4 bytes, but only 3 follow"},
		{"FRAME past the end", proto + "\x95" + u64(1<<40) + "N.", "FRAME (opcode 0x95) at byte 2: declares a frame of 1099511627776 bytes, but only 2 follow"},
		{"FRAME size cut short", proto + "\x95\x01\x00", "declares 8 bytes, but only 2 follow"},
		{"BININT cut short", proto + "J\x01\x02", "BININT (opcode 0x4a) at byte 2: declares 4 bytes, but only 2 follow"},
		{"BINFLOAT cut short", proto + "G\x00\x00\x00", "BINFLOAT (opcode 0x47) at byte 2: declares 8 bytes"},
		{"INT without its newline", "I12345", "INT (opcode 0x49) at byte 0: no end of line before the end of the file"},
		{"GLOBAL with one line of two", "cbuiltins\nset", "GLOBAL (opcode 0x63) at byte 0: no end of line"},
		{"a length in the middle lies", proto + "\x8c\x01a\x94X" + u32(1000) + "short.", "BINUNICODE (opcode 0x58) at byte 6: declares 1000 bytes, but only 6 follow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Scan([]byte(c.pickle))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Scan(%q) = %v, want an error containing %q", c.pickle, err, c.want)
			}
		})
	}
}

// The longest integers Scan lets through: 4,300 decimal digits, and the bytes of the
// widest such integer in LONG4's two's complement.
func TestScanLongIntegers(t *testing.T) {
	widest := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(MaxLongDigits), nil), big.NewInt(1))
	if bytes := (widest.BitLen() + 1 + 7) / 8; bytes != MaxLongBytes { // + 1: the sign bit
		t.Errorf("10^%d−1 takes %d bytes in two's complement, MaxLongBytes is %d", MaxLongDigits, bytes, MaxLongBytes)
	}
	for _, p := range []string{
		"L" + widest.String() + "\n.",
		"L-" + widest.String() + "L\n.",
		"L+" + widest.String() + "\n.",
		"\x80\x02\x8b" + string(binary.LittleEndian.AppendUint32(nil, MaxLongBytes)) + strings.Repeat("\xff", MaxLongBytes) + ".",
	} {
		if err := Scan([]byte(p)); err != nil {
			t.Errorf("%.20q...: %v", p, err)
		}
	}
}

// An argument of length zero is well formed: the empty string or bytes, and for LONG1 and
// LONG4 the integer 0 (pickle writes 0 so).
func TestScanEmptyArguments(t *testing.T) {
	for _, c := range []struct {
		name, pickle string
	}{
		{"SHORT_BINSTRING", "U\x00"},
		{"SHORT_BINBYTES", "C\x00"},
		{"SHORT_BINUNICODE", "\x8c\x00"},
		{"LONG1", "\x8a\x00"},
		{"BINSTRING", "T\x00\x00\x00\x00"},
		{"BINBYTES", "B\x00\x00\x00\x00"},
		{"BINUNICODE", "X\x00\x00\x00\x00"},
		{"LONG4", "\x8b\x00\x00\x00\x00"},
		{"BINUNICODE8", "\x8d" + strings.Repeat("\x00", 8)},
		{"BINBYTES8", "\x8e" + strings.Repeat("\x00", 8)},
		{"BYTEARRAY8", "\x96" + strings.Repeat("\x00", 8)},
		{"FRAME", "\x95" + strings.Repeat("\x00", 8)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := Scan([]byte("\x80\x04" + c.pickle + ".")); err != nil {
				t.Errorf("Scan(%q): %v", c.pickle, err)
			}
		})
	}
}

// pickletools' opcode table (Python 3.11), as the kind of argument each opcode takes: the
// reference Scan's switch is checked against, byte by byte.
var pickletoolsArgs = map[byte]string{
	'I': "line", 'J': "4", 'K': "1", 'M': "2", 'L': "line", 0x8a: "len1", 0x8b: "len4",
	'S': "line", 'T': "len4", 'U': "len1", 'B': "len4", 'C': "len1", 0x8e: "len8", 0x96: "len8",
	0x97: "", 0x98: "", 'N': "", 0x88: "", 0x89: "", 'V': "line", 0x8c: "len1", 'X': "len4",
	0x8d: "len8", 'F': "line", 'G': "8", ']': "", 'a': "", 'e': "", 'l': "", ')': "", 't': "",
	0x85: "", 0x86: "", 0x87: "", '}': "", 'd': "", 's': "", 'u': "", 0x8f: "", 0x90: "",
	0x91: "", '0': "", '2': "", '(': "", '1': "", 'g': "line", 'h': "1", 'j': "4", 'p': "line",
	'q': "1", 'r': "4", 0x94: "", 0x82: "1", 0x83: "2", 0x84: "4", 'c': "lines2", 0x93: "",
	'R': "", 'b': "", 'i': "lines2", 'o': "", 0x81: "", 0x92: "", 0x80: "1", '.': "",
	0x95: "8", 'P': "line", 'Q': "",
}

// Every byte: an opcode unknown to pickletools is refused; a known one is accepted with a
// well-formed argument and refused with a short or unterminated one, whatever the
// opcode's meaning (Scan checks lengths, not the stack).
func TestScanOpcodeTable(t *testing.T) {
	if len(pickletoolsArgs) != 68 {
		t.Fatalf("the table has %d opcodes, pickletools 68", len(pickletoolsArgs))
	}
	for b := range 256 {
		op := byte(b)
		kind, known := pickletoolsArgs[op]
		name := fmt.Sprintf("%#x", op)
		if !known {
			if err := Scan([]byte{op, '.'}); err == nil || !strings.Contains(err.Error(), "unknown opcode") {
				t.Errorf("%s: not a pickle opcode, Scan says %v", name, err)
			}
			continue
		}
		if op == '.' {
			continue // STOP: the end of every case below
		}
		var good, bad, want string
		switch kind {
		case "":
			good, bad, want = "", "", "without its STOP"
		case "line":
			good, bad, want = "12\n", "12.", "no end of line"
		case "lines2":
			good, bad, want = "a\nb\n", "a\nb.", "no end of line"
		case "1", "2", "4", "8":
			n := int(kind[0] - '0')
			good, bad, want = strings.Repeat("\x00", n), strings.Repeat("\x00", n-1), fmt.Sprintf("declares %d bytes, but only %d follow", n, n-1)
		case "len1":
			good, bad, want = "\x01a", "\x05a.", "declares 5 bytes, but only 2 follow"
		case "len4":
			good, bad, want = "\x01\x00\x00\x00a", "\x05\x00\x00\x00a.", "declares 5 bytes, but only 2 follow"
		case "len8":
			good, bad, want = "\x01"+strings.Repeat("\x00", 7)+"a", "\x05"+strings.Repeat("\x00", 7)+"a.", "declares 5 bytes, but only 2 follow"
		}
		if err := Scan([]byte(string([]byte{op}) + good + ".")); err != nil {
			t.Errorf("%s %s with %q: %v", name, kind, good, err)
		}
		if err := Scan([]byte(string([]byte{op}) + bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s with %q: Scan says %v, want %q", name, kind, bad, err, want)
		}
	}
}

func ExampleScan() {
	// A 4-byte BINUNICODE length of 2^31 in a 12-byte file: a decoder would allocate 2 GiB.
	lying := []byte("\x80\x04X\x00\x00\x00\x80abc.")
	fmt.Println(Scan(lying))
	// Output: BINUNICODE (opcode 0x58) at byte 2: declares 2147483648 bytes, but only 4 follow
}

// FuzzScan checks that Scan never reads out of bounds (a panic), and that acceptance only
// grows with the file: bytes after the STOP are not read, and a frame that fits in a
// prefix fits in the whole. The shortest accepted prefix holds its STOP; it ends at the
// STOP, or later where a frame around the STOP declares more bytes (as Python's
// unpickler, Scan reads a frame whole).
func FuzzScan(f *testing.F) {
	for _, data := range pythonPickles(f) {
		f.Add(data)
	}
	f.Add([]byte("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00\x8c\x01a\x94."))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 || Scan(data) != nil {
			return
		}
		shortest := 0
		for Scan(data[:shortest]) != nil {
			shortest++
		}
		if bytes.IndexByte(data[:shortest], '.') < 0 {
			t.Fatalf("accepted %q, which has no STOP", data[:shortest])
		}
		for n := shortest; n <= len(data); n++ {
			if err := Scan(data[:n]); err != nil {
				t.Fatalf("accepted the first %d bytes but not the first %d: %v", shortest, n, err)
			}
		}
	})
}

// BenchmarkScan scans a pickle of BetaE's shape: a dict from query tuples to sets of
// answer ids, 200,000 queries of 20 answers (about 15 MB at protocol 4).
func BenchmarkScan(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("\x80\x04}\x94(")
	for i := range 200_000 {
		fmt.Fprintf(&buf, "J%sK\x07\x85\x94\x86\x94\x8f\x94(", string(binary.LittleEndian.AppendUint32(nil, uint32(i))))
		for j := range 20 {
			buf.WriteString("M" + string(binary.LittleEndian.AppendUint16(nil, uint16(i*7+j))))
		}
		buf.WriteString("\x90u(") // ADDITEMS, then SETITEMS of a batch and the next MARK
	}
	buf.WriteString("u.")
	data := buf.Bytes()
	if err := Scan(data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Scan(data); err != nil {
			b.Fatal(err)
		}
	}
}
