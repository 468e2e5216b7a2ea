// Package picklescan checks a Python pickle's declared lengths before a decoder allocates
// them. gopickle makes a buffer of whatever length a string, bytes or frame opcode
// declares, and then reads it, so one lying length in a small file would ask for
// terabytes and end the process; Scan reads the opcodes without building anything and
// refuses such a file. Every reader of outside pickles (BetaE query files, PyTorch
// checkpoints) runs it first, and names what gopickle decoded by its Python type in its
// errors (PyType, TorchDtype).
package picklescan

import (
	"bytes"
	"fmt"
)

// argument is how an opcode's argument is laid out after it.
type argument uint8

const (
	none       argument = iota
	line                // text up to and including a newline
	twoLines            // module and name, each up to a newline
	fixed1              // 1 byte
	fixed2              // 2 bytes, little-endian
	fixed4              // 4 bytes
	fixed8              // 8 bytes
	len1                // a 1-byte length, then that many bytes
	len4                // a 4-byte unsigned length, then that many bytes
	len4signed          // a 4-byte signed length (BINSTRING), then that many bytes
	long4               // LONG4: as len4signed, at most MaxLongBytes
	longLine            // LONG: a decimal line of at most MaxLongDigits digits
	len8                // an 8-byte length, then that many bytes
	frame               // an 8-byte frame size; the frame's opcodes follow
	stop                // none: the end of the pickle
)

type opcode struct {
	name string
	arg  argument
}

// opcodes is the pickle machine's instruction set, protocols 0 to 5, with Python's names;
// the bytes that are not opcodes have no name.
var opcodes = [256]opcode{
	'(': {"MARK", none}, '.': {"STOP", stop}, '0': {"POP", none}, '1': {"POP_MARK", none},
	'2': {"DUP", none}, 'F': {"FLOAT", line}, 'I': {"INT", line}, 'J': {"BININT", fixed4},
	'K': {"BININT1", fixed1}, 'L': {"LONG", longLine}, 'M': {"BININT2", fixed2}, 'N': {"NONE", none},
	'P': {"PERSID", line}, 'Q': {"BINPERSID", none}, 'R': {"REDUCE", none},
	'S': {"STRING", line}, 'T': {"BINSTRING", len4signed}, 'U': {"SHORT_BINSTRING", len1},
	'V': {"UNICODE", line}, 'X': {"BINUNICODE", len4}, 'a': {"APPEND", none},
	'b': {"BUILD", none}, 'c': {"GLOBAL", twoLines}, 'd': {"DICT", none},
	'}': {"EMPTY_DICT", none}, 'e': {"APPENDS", none}, 'g': {"GET", line},
	'h': {"BINGET", fixed1}, 'i': {"INST", twoLines}, 'j': {"LONG_BINGET", fixed4},
	'l': {"LIST", none}, ']': {"EMPTY_LIST", none}, 'o': {"OBJ", none}, 'p': {"PUT", line},
	'q': {"BINPUT", fixed1}, 'r': {"LONG_BINPUT", fixed4}, 's': {"SETITEM", none},
	't': {"TUPLE", none}, ')': {"EMPTY_TUPLE", none}, 'u': {"SETITEMS", none},
	'G': {"BINFLOAT", fixed8}, 'B': {"BINBYTES", len4}, 'C': {"SHORT_BINBYTES", len1},
	0x80: {"PROTO", fixed1}, 0x81: {"NEWOBJ", none}, 0x82: {"EXT1", fixed1},
	0x83: {"EXT2", fixed2}, 0x84: {"EXT4", fixed4}, 0x85: {"TUPLE1", none},
	0x86: {"TUPLE2", none}, 0x87: {"TUPLE3", none}, 0x88: {"NEWTRUE", none},
	0x89: {"NEWFALSE", none}, 0x8a: {"LONG1", len1}, 0x8b: {"LONG4", long4},
	0x8c: {"SHORT_BINUNICODE", len1}, 0x8d: {"BINUNICODE8", len8}, 0x8e: {"BINBYTES8", len8},
	0x8f: {"EMPTY_SET", none}, 0x90: {"ADDITEMS", none}, 0x91: {"FROZENSET", none},
	0x92: {"NEWOBJ_EX", none}, 0x93: {"STACK_GLOBAL", none}, 0x94: {"MEMOIZE", none},
	0x95: {"FRAME", frame}, 0x96: {"BYTEARRAY8", len8}, 0x97: {"NEXT_BUFFER", none},
	0x98: {"READONLY_BUFFER", none},
}

// gopickle turns a long integer into a big.Int in time quadratic in its length (a LONG4 of
// 256 KiB takes 1.3 s, of 4 MiB about 5 minutes; a LONG of a million digits 1.4 s), so a
// small file could hold a reader for hours. Python refuses to convert a decimal integer
// of more than 4,300 digits for the same reason (its int_max_str_digits, CVE-2020-10735);
// Scan refuses a LONG of more digits, and a LONG4 of more bytes than such an integer
// needs. No pickle this project reads holds an integer wider than 64 bits.
const (
	MaxLongDigits = 4300
	MaxLongBytes  = 1786 // ⌈4300·log₂10 / 8⌉
)

// Scan walks the opcodes of a pickle without building anything, and checks every
// length the pickle declares (of a string, bytes, a long integer, a frame) against the
// bytes that follow it: gopickle allocates a declared length before reading, so a lying
// one would ask for terabytes. It also checks that every opcode is known, that long
// integers are at most MaxLongDigits digits or MaxLongBytes bytes, and that the pickle
// ends with STOP; what follows the STOP is not read. Errors name the opcode and
// its offset.
func Scan(data []byte) error {
	pos := 0 // the next byte to read
	at := 0  // the offset of the opcode being read, which every error names
	var op opcode
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s (opcode %#x) at byte %d: %s", op.name, data[at], at, fmt.Sprintf(format, args...))
	}
	// take consumes n bytes of argument.
	take := func(n uint64) error {
		if n > uint64(len(data)-pos) {
			return fail("declares %d bytes, but only %d follow", n, len(data)-pos)
		}
		pos += int(n)
		return nil
	}
	// number consumes a size-byte little-endian unsigned integer.
	number := func(size int) (uint64, error) {
		if err := take(uint64(size)); err != nil {
			return 0, err
		}
		var v uint64
		for i := pos - 1; i >= pos-size; i-- {
			v = v<<8 | uint64(data[i])
		}
		return v, nil
	}
	endOfLine := func() error {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			return fail("no end of line before the end of the file")
		}
		pos += i + 1
		return nil
	}

	for pos < len(data) {
		at = pos
		if op = opcodes[data[pos]]; op.name == "" {
			return fmt.Errorf("unknown opcode %#x at byte %d", data[pos], at)
		}
		pos++

		var err error
		var n uint64
		switch op.arg {
		case stop:
			return nil
		case none:
		case line:
			err = endOfLine()
		case longLine:
			if err = endOfLine(); err == nil {
				digits := bytes.TrimSuffix(bytes.TrimLeft(data[at+1:pos-1], "+-"), []byte("L"))
				if len(digits) > MaxLongDigits {
					err = fail("an integer of %d digits; at most %d are read (converting more takes time quadratic in their number)", len(digits), MaxLongDigits)
				}
			}
		case twoLines:
			if err = endOfLine(); err == nil {
				err = endOfLine()
			}
		case fixed1:
			err = take(1)
		case fixed2:
			err = take(2)
		case fixed4:
			err = take(4)
		case fixed8:
			err = take(8)
		case len1:
			if n, err = number(1); err == nil {
				err = take(n)
			}
		case len4:
			if n, err = number(4); err == nil {
				err = take(n)
			}
		case len4signed:
			if n, err = number(4); err == nil {
				if int32(n) < 0 {
					err = fail("declares a negative length %d", int32(n))
				} else {
					err = take(n)
				}
			}
		case long4:
			if n, err = number(4); err == nil {
				switch {
				case int32(n) < 0:
					err = fail("declares a negative length %d", int32(n))
				case n > MaxLongBytes:
					err = fail("an integer of %d bytes; at most %d are read (converting more takes time quadratic in their number)", n, MaxLongBytes)
				default:
					err = take(n)
				}
			}
		case len8:
			if n, err = number(8); err == nil {
				err = take(n)
			}
		case frame:
			// The frame's own opcodes are walked like any others; its size must fit.
			if n, err = number(8); err == nil && n > uint64(len(data)-pos) {
				err = fail("declares a frame of %d bytes, but only %d follow", n, len(data)-pos)
			}
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("truncated: the pickle ends after %d bytes without its STOP opcode", len(data))
}
