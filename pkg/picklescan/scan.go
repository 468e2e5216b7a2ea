// Package picklescan checks a Python pickle's declared lengths before a decoder allocates
// them. gopickle makes a buffer of whatever length a string, bytes or frame opcode
// declares, and then reads it, so one lying length in a small file would ask for
// terabytes and end the process; Scan reads the opcodes without building anything and
// refuses such a file. Every reader of outside pickles (BetaE query files, PyTorch
// checkpoints) runs it first.
package picklescan

import (
	"bytes"
	"fmt"
)

// Scan walks the opcodes of a pickle without building anything, and checks every
// length the pickle declares (of a string, bytes, a long integer, a frame) against the
// bytes that follow it: gopickle allocates a declared length before reading, so a lying
// one would ask for terabytes. It also checks that every opcode is known and that the
// pickle ends with STOP.
func Scan(data []byte) error {
	pos := 0
	need := func(n uint64, op byte) error {
		if n > uint64(len(data)-pos) {
			return fmt.Errorf("opcode %q at byte %d declares %d bytes, but only %d follow", op, pos-1, n, len(data)-pos)
		}
		pos += int(n)
		return nil
	}
	uint := func(size int, op byte) (uint64, error) {
		if err := need(uint64(size), op); err != nil {
			return 0, err
		}
		var v uint64
		for i := size - 1; i >= 0; i-- {
			v = v<<8 | uint64(data[pos-size+i])
		}
		return v, nil
	}
	line := func(op byte) error {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			return fmt.Errorf("opcode %q at byte %d: no end of line before the end of the file", op, pos-1)
		}
		pos += i + 1
		return nil
	}
	for pos < len(data) {
		op := data[pos]
		pos++
		var err error
		switch op {
		case '.': // STOP
			return nil
		case '(', '0', '1', '2', 'N', 'Q', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 'o', 's', 't', ')', 'u',
			0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x97, 0x98:
			// no argument
		case 'F', 'I', 'L', 'P', 'S', 'V', 'g', 'p': // one line
			err = line(op)
		case 'c', 'i': // two lines
			if err = line(op); err == nil {
				err = line(op)
			}
		case 'K', 'h', 'q', 0x80, 0x82: // 1-byte argument
			_, err = uint(1, op)
		case 'M', 0x83: // 2-byte argument
			_, err = uint(2, op)
		case 'J', 'j', 'r', 0x84: // 4-byte argument
			_, err = uint(4, op)
		case 'G': // 8-byte float
			_, err = uint(8, op)
		case 0x95: // FRAME: 8-byte size of the frame that follows, opcodes within it
			var n uint64
			if n, err = uint(8, op); err == nil && n > uint64(len(data)-pos) {
				err = fmt.Errorf("frame at byte %d declares %d bytes, but only %d follow", pos-9, n, len(data)-pos)
			}
		case 'U', 'C', 0x8a, 0x8c: // 1-byte length, then that many bytes
			var n uint64
			if n, err = uint(1, op); err == nil {
				err = need(n, op)
			}
		case 'T', 'X', 'B', 0x8b: // 4-byte length (signed for BINSTRING and LONG4)
			var n uint64
			if n, err = uint(4, op); err == nil {
				if (op == 'T' || op == 0x8b) && int32(n) < 0 {
					err = fmt.Errorf("opcode %q at byte %d declares a negative length %d", op, pos-5, int32(n))
				} else {
					err = need(n, op)
				}
			}
		case 0x8d, 0x8e, 0x96: // 8-byte length
			var n uint64
			if n, err = uint(8, op); err == nil {
				err = need(n, op)
			}
		default:
			return fmt.Errorf("unknown opcode %#x at byte %d", op, pos-1)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("truncated: the pickle ends after %d bytes without its STOP opcode", len(data))
}
