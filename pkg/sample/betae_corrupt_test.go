package sample

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
)

// goPointer matches a printed Go pointer (0xc000012345), not an opcode (0x8d).
var goPointer = regexp.MustCompile(`0x[0-9a-f]{6,}`)

// proto4 starts a protocol-4 pickle.
const proto4 = "\x80\x04"

func u64(n uint64) string { return string(binary.LittleEndian.AppendUint64(nil, n)) }
func u32(n uint32) string { return string(binary.LittleEndian.AppendUint32(nil, n)) }

// TestCorruptPickle checks pickles that declare more than they hold, are cut short or
// have the wrong shape: each gets an error naming the file and what is wrong, without
// allocating what the pickle declares, printing a Go pointer or panicking.
func TestCorruptPickle(t *testing.T) {
	tiny, err := os.ReadFile("../../testdata/tiny-queries.pkl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, data, want string }{
		{"2^40-byte BINUNICODE8", proto4 + "\x8d" + u64(1<<40) + "ab.", "declares 1099511627776 bytes, but only 3 follow"},
		{"2^40-byte BINBYTES8", proto4 + "\x8e" + u64(1<<40) + ".", "declares 1099511627776 bytes"},
		{"2^40-byte FRAME", proto4 + "\x95" + u64(1<<40) + "N.", "FRAME (opcode 0x95) at byte 2: declares a frame of 1099511627776 bytes"},
		{"4 GB BINUNICODE", "\x80\x03X" + u32(0xffffffff) + ".", "declares 4294967295 bytes"},
		{"negative BINSTRING", "T" + u32(0xfffffff0) + ".", "negative length"},
		{"LONG4 past the end", "\x80\x02\x8b" + u32(1<<30) + ".", "LONG4 (opcode 0x8b) at byte 2: an integer of 1073741824 bytes; at most 1786 are read"},
		// Whole, but gopickle's conversion is quadratic: 4 MiB would take minutes.
		{"a LONG4 of 4 MiB", "\x80\x02\x8b" + u32(4<<20) + strings.Repeat("\x07", 4<<20) + ".", "an integer of 4194304 bytes; at most 1786 are read"},
		{"a LONG of a million digits", "L" + strings.Repeat("7", 1e6) + "\n.", "LONG (opcode 0x4c) at byte 0: an integer of 1000000 digits; at most 4300 are read"},
		{"SHORT_BINUNICODE past the end", proto4 + "\x8c\xffab.", "declares 255 bytes, but only 3 follow"},
		{"unknown opcode", proto4 + "\xff.", "unknown opcode 0xff at byte 2"},
		{"no STOP", proto4 + "N", "without its STOP opcode"},
		{"truncated real pickle", string(tiny[:len(tiny)/2]), "not a readable BetaE query pickle"},
		{"empty", "", "without its STOP opcode"},
		{"a list, not a dict", proto4 + "]\x94.", "want a dict of structure -> set of queries, found a list"},
		{"a dict of lists", proto4 + "}(\x8c\x01e\x8c\x01r\x85\x86]u.", "key ('e',('r',)): want a set of queries, found a list"},
		{"a key that is a dict", proto4 + "}\x94(}\x94]\x94u.", "key 1 of the dict: a dict in a query tuple"},
		{"stack underflow", proto4 + "u.", "not a readable BetaE query pickle"},
		// BetaE's other pickles, given for the queries: its answers files map each query to
		// a set of entity ids ({(0,(0,)): {1, 2}}), id2ent.pkl ids to names, ent2id.pkl
		// names to ids. They used to be refused as a malformed structure ("key (0,(0,)):
		// query \"(0,(0,))\": at offset 1: a branch must be a tuple, not an atom").
		{"an answers pickle", proto4 + "}(" + "K\x00K\x00\x85\x86" + "\x8f(K\x01K\x02\x90" + "u.",
			"key (0,(0,)) is a query of ids, not a structure: an answers pickle (BetaE's *-answers.pkl), not a queries pickle; --pickle takes {valid,test}-queries.pkl"},
		{"an id2ent pickle", proto4 + "}(" + "K\x00\x8c\x08/m/027rn" + "u.", "key 0 is of type int, not a query structure such as ('e',('r',)): not a BetaE queries pickle"},
		{"an ent2id pickle", proto4 + "}(" + "\x8c\x08/m/027rnK\x00" + "u.", "key '/m/027rn' is of type str, not a query structure"},
		{"an id of 2^70", proto4 + "}(\x8c\x01e\x8c\x01r\x85\x86\x8f(\x8a\x09" + strings.Repeat("\x00", 8) + "\x40K\x00\x85\x86\x90u.",
			"an int of 71 bits in a query tuple is out of range: ids are 32-bit"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "q.pkl")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			n := allocatedBy(func() { _, err = readBetaEPickle(path) })
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming the file and %q", err, tc.want)
			}
			if goPointer.MatchString(err.Error()) {
				t.Fatalf("error %q prints a pointer", err)
			}
			if n > pickleAllocationBound(len(tc.data)) {
				t.Fatalf("allocated %d bytes for a %d-byte pickle", n, len(tc.data))
			}
		})
	}
}

// TestSharedTuplePickle: tuples shared through the memo, each holding the previous one
// twice, print as text twice as long per level; 60 levels would be 2^60 bytes of text.
func TestSharedTuplePickle(t *testing.T) {
	p := proto4 + "}\x94(" + "K\x01\x940" // dict, mark, 1 memoized as 1
	for i := 1; i <= 60; i++ {
		p += "h" + string(rune(i)) + "h" + string(rune(i)) + "\x86\x940" // (m[i], m[i]) memoized as i+1
	}
	p += "h=\x8f\x94u." // {m[61]: set()}
	path := filepath.Join(t.TempDir(), "q.pkl")
	if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readBetaEPickle(path)
	if err == nil || !strings.Contains(err.Error(), "nested more than") && !strings.Contains(err.Error(), "longer than the file") {
		t.Fatalf("got %v", err)
	}
}

// TestPickleReadAsPython: a pickle may set a dict key twice and add equal tuples to a set;
// Python keeps the key's last value and one of the equal tuples, and so does the import.
// (Python reads this pickle as {('e', ('r',)): {(3, (0,)), (4, (0,))}}.)
func TestPickleReadAsPython(t *testing.T) {
	key := "\x8c\x01e\x8c\x01r\x85\x86"                                         // ('e', ('r',))
	q := func(a byte) string { return "K" + string(rune(a)) + "K\x00\x85\x86" } // (a, (0,))
	p := proto4 + "}(" +
		key + "\x8f(" + q(1) + q(1) + q(2) + "\x90" + // {(1,(0,)), (1,(0,)), (2,(0,))}
		key + "\x8f(" + q(4) + q(3) + q(4) + "\x90" + // the same key again
		"u."
	path := filepath.Join(t.TempDir(), "q.pkl")
	if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	groups, err := readBetaEPickle(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].name != "1p" || !slices.Equal(groups[0].queries, []string{"(3,(0,))", "(4,(0,))"}) {
		t.Fatalf("got %+v, want one 1p group of (3,(0,)) and (4,(0,))", groups)
	}
}

func allocatedBy(f func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// pickleAllocationBound is the most reading a pickle of n bytes may allocate: its bytes,
// the values gopickle builds from them and the texts of the tuples, each a bounded
// multiple of the input, and a constant for the unpickler itself.
func pickleAllocationBound(n int) uint64 { return 256*uint64(n) + 8<<20 }

// FuzzBetaEPickle reads arbitrary bytes as a BetaE query pickle: no panic, an error
// naming the file or groups of query texts, and allocation bounded by the input's size.
func FuzzBetaEPickle(f *testing.F) {
	for _, name := range []string{"tiny-queries.pkl", "bad-queries.pkl", "outofrange-queries.pkl"} {
		data, err := os.ReadFile(filepath.Join("../../testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(proto4 + "}\x94(" + "K\x01\x94" + "h\x01h\x01\x86\x94\x8f\x94u."))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "q.pkl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var groups []pickleGroup
		var err error
		n := allocatedBy(func() { groups, err = readBetaEPickle(path) })
		if n > pickleAllocationBound(len(data)) {
			t.Fatalf("allocated %d bytes for a %d-byte pickle", n, len(data))
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, g := range groups {
			if g.name == "" || g.notation == "" {
				t.Fatalf("group without a name: %+v", g)
			}
		}
	})
}
