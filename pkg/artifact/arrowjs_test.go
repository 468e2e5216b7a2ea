package artifact

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/arrowcheck"
)

// TestArrowJS checks that another Arrow implementation reads what this package writes, in
// both formats, through scripts/arrow-check. It needs node and the script's packages (npm
// ci --prefix scripts/arrow-check): without them it is skipped, unless ARROW_CHECK_JS is
// set, as make test-js does, and then it fails.
func TestArrowJS(t *testing.T) {
	node, script := arrowcheck.Script(t, "check.mjs", "apache-arrow")

	qs := testQueries(maxBatchRows + 7) // two batches
	const head = 6                      // rows to compare value by value
	file := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(file, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, streamFile(t, qs)} {
		cmd := exec.Command(node, script, "--head", strconv.Itoa(head), path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("check.mjs %s: %v\n%s", path, err, stderr.String())
		}
		fields, meta, rows, firstRows := parseCheck(t, string(out))
		wantFields := []string{
			"id: Int64 not null",
			"type: Utf8 not null",
			"structure: Utf8 not null",
			"anchors: List<Int32> not null",
			"relations: List<Int32> not null",
			"easy: List<Int32> not null",
			"hard: List<Int32> not null",
		}
		if !slices.Equal(fields, wantFields) {
			t.Errorf("%s: fields\n%s\nwant\n%s", path, strings.Join(fields, "\n"), strings.Join(wantFields, "\n"))
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := r.Schema().Metadata().GetValue(MetaChecksum) // a digest in a file, "trailer" in a stream
		r.Close()
		wantMeta := []string{
			"artifact: queries", "version: 1", "dataset: toy", "entities_digest:",
			"kg_digest:", "num_entities: 1000", "num_relations: 20", "split: valid", MetaChecksum + ": " + sum,
		}
		if !slices.Equal(meta, wantMeta) {
			t.Errorf("%s: metadata %q, want %q", path, meta, wantMeta)
		}
		if want := strconv.Itoa(len(qs)); rows != want {
			t.Errorf("%s: rows %q, want %s", path, rows, want)
		}
		if len(firstRows) != head {
			t.Fatalf("%s: printed %d rows, want %d", path, len(firstRows), head)
		}
		sameQueries(t, firstRows, qs[:head])
	}
	// What is not an Arrow file is an error, not a table of nothing (apache-arrow reads
	// no bytes, or an end-of-stream marker alone, as an empty table).
	dir := t.TempDir()
	for name, content := range map[string]string{"empty": "", "eos": "\xff\xff\xff\xff\x00\x00\x00\x00", "text": "id\ttype\n0\t1p\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(node, script, path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err == nil || !strings.HasPrefix(stderr.String(), path+": ") {
			t.Errorf("check.mjs on %s: err %v, stderr %q, stdout %q; want an error naming the file", name, err, stderr.String(), out)
		}
	}
}

// parseCheck splits the output of check.mjs into its field lines, its metadata lines, its
// row count and the rows it printed.
func parseCheck(t *testing.T, out string) (fields, meta []string, rows string, qs []Query) {
	var section *[]string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "fields:":
			section = &fields
		case line == "metadata:":
			section = &meta
		case strings.HasPrefix(line, "rows: "):
			rows = strings.TrimPrefix(line, "rows: ")
			section = nil
		case strings.HasPrefix(line, "row "):
			_, obj, _ := strings.Cut(line, ": ")
			var q struct {
				ID                             int64
				Type, Structure                string
				Anchors, Relations, Easy, Hard []int32
			}
			if err := json.Unmarshal([]byte(obj), &q); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			qs = append(qs, Query(q))
		case strings.HasPrefix(line, "  ") && section != nil:
			*section = append(*section, strings.TrimSpace(line))
		default:
			section = nil
		}
	}
	return fields, meta, rows, qs
}
