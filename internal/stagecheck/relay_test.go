package stagecheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// relayCommit stands for the commit the binaries of a relayed run were built from.
const relayCommit = "0123456789abcdef0123456789abcdef01234567"

// relayScript runs scripts/cuda/relay.sh with args and env (on top of the trial's
// settings and 100,000-byte parts), returning its combined output and error.
func relayScript(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(stagetest.RepoRoot(t), "scripts", "cuda", "relay.sh"), args...)
	cmd.Env = append(append(append(os.Environ(), trialSettings...), "PART_BYTES=100000", "XZ_OPT=-0"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stageBinaries makes folder dir/bin hold the built stages (links, in place of the
// stand-ins a received bin.tar.xz left there, beside its RUN) and a COMMIT.
func stageBinaries(t *testing.T, bin, dir, commit string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sample", "train", "rank", "metrics"} {
		if err := os.Remove(filepath.Join(dir, "bin", s)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(bin, s), filepath.Join(dir, "bin", s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "COMMIT"), []byte(commit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRelay carries a paper run between two "sessions" with scripts/cuda/relay.sh, on the
// CPU with a trial's settings: the first session's run is cut by its budget and packed,
// its batches come back one call at a time (a damaged part is refused, an incomplete
// relay says what it lacks), the plan's calls carry every part once within a call's
// limits, the second session receives them, unpacks and finishes the run, and its
// checkpoint is byte for byte the one of a run that was never interrupted. Then the
// refusals: a checkpoint already in WORK, other binaries, a missing part, two relays
// mixed, a batch that does not exist; and a newer pack that has not all come leaves the
// complete one in place.
func TestRelay(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tool := range []string{"xz", "sha256sum", "split", "realpath"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	bin := binaries(t)
	dir := t.TempDir()
	const steps = "4000"
	entry := filepath.Join(dir, "results", "fb15k-237", "rocone", "seed0-relayed")

	// Here: a relay folder started from a device-step pack (stand-ins for the binaries:
	// the runs below use the built ones).
	pk := filepath.Join(dir, "pk", "device-step")
	if err := os.MkdirAll(pk, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train", "sample", "rank", "metrics"} {
		if err := os.WriteFile(filepath.Join(pk, f), []byte("#!/bin/sh\necho "+f+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pk, "COMMIT"), []byte(relayCommit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(dir, "device-step.tar.xz")
	if out, err := exec.Command("tar", "-C", filepath.Dir(pk), "-cJf", pack, "device-step").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	relay := filepath.Join(dir, "relay", "fb15k-237-rocone-seed0")
	initArgs := []string{"init", relay, pack, "fb15k-237", "rocone", "0", entry}
	if out, err := relayScript(t, []string{"STEPS=" + steps}, initArgs...); err != nil || !strings.Contains(out, "commit "+relayCommit) ||
		!strings.Contains(out, "steps "+steps) || !strings.Contains(out, "extra --dim 8") {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := relayScript(t, nil, initArgs...); err == nil || !strings.Contains(out, "exists") {
		t.Errorf("a second init into the same folder: %v\n%s", err, out)
	}
	if out, err := relayScript(t, nil, "status", relay); err == nil || !strings.Contains(out, "binaries only") {
		t.Errorf("status before any part: %v\n%s", err, out)
	}

	// Session 1, on the "device": the binaries, then a run cut by its budget, packed, and
	// its batch 0 sent. The budget grows until the cut falls after train has started.
	dev1, copy1 := filepath.Join(dir, "dev1"), filepath.Join(dir, "copy1")
	if err := os.MkdirAll(copy1, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(relay, "bin.tar.xz"), filepath.Join(copy1, "bin.tar.xz")); err != nil {
		t.Fatal(err)
	}
	if out, err := relayScript(t, nil, "receive", copy1, dev1); err != nil || !strings.Contains(out, "the binaries of commit "+relayCommit) {
		t.Fatalf("receive of the binaries: %v\n%s", err, out)
	}
	stageBinaries(t, bin, dev1, relayCommit)
	batchLine := regexp.MustCompile(`relay: batch 0 of (\d+) `)
	var batches int
	var cut string // the budget that cut the first piece
	for _, budget := range []string{"0.5", "1", "2", "4", "8"} {
		out0 := filepath.Join(dir, "out0")
		if err := os.RemoveAll(out0); err != nil {
			t.Fatal(err)
		}
		// The run's settings are RUN's: another STEPS here changes nothing.
		out, err := relayScript(t, []string{"STEPS=7", "BUDGET=" + budget, "BATCH=2"}, "run", dev1, out0)
		if strings.Contains(out, "paper-run: wrote") {
			t.Fatalf("%s steps finished within %ss: the cut never came\n%s", steps, budget, out)
		}
		if m := batchLine.FindStringSubmatch(out); err == nil && m != nil {
			batches, _ = strconv.Atoi(m[1])
			cut = budget
			break
		}
		if !strings.Contains(out, "no checkpoint") {
			t.Fatalf("session 1, budget %ss: %v\n%s", budget, err, out)
		}
	}
	if batches < 3 {
		t.Fatalf("session 1 packed %d batches; the test wants 3 or more (smaller PART_BYTES)", batches)
	}
	// A second piece on the same warm machine, nothing carried: it trains on from the work
	// folder the first left (no unpack), packs it anew and sends the new pack's batch 0.
	// Here, the first pack's batch 0, already collected, is dropped for the newer pack's
	// parts (checked at the first collect of those below).
	if out, err := relayScript(t, nil, "collect", filepath.Join(dir, "out0"), relay); err != nil || !strings.Contains(out, "still to come") {
		t.Fatalf("collect of the first piece's batch 0: %v\n%s", err, out)
	}
	firstManifest, err := os.ReadFile(filepath.Join(dir, "out0", "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	resumed := regexp.MustCompile(`train queries, steps [1-9][0-9]* to `)
	out, err := relayScript(t, []string{"BUDGET=" + cut, "BATCH=2"}, "run", dev1, filepath.Join(dir, "out0b"))
	if strings.Contains(out, "paper-run: wrote") {
		t.Fatalf("the second piece finished all %s steps within %ss: the test wants it cut too\n%s", steps, cut, out)
	}
	m := batchLine.FindStringSubmatch(out)
	if err != nil || m == nil || strings.Contains(out, "restored from") || !resumed.MatchString(out) {
		t.Fatalf("a second piece on the warm machine (budget %ss): %v\n%s", cut, err, out)
	}
	if batches, _ = strconv.Atoi(m[1]); batches < 3 {
		t.Fatalf("the second piece packed %d batches; the test wants 3 or more (smaller PART_BYTES)", batches)
	}
	if second, err := os.ReadFile(filepath.Join(dir, "out0b", "MANIFEST")); err != nil || bytes.Equal(second, firstManifest) {
		t.Fatalf("the second piece's MANIFEST is the first's (or unreadable: %v): it packed nothing new", err)
	}
	outs := []string{filepath.Join(dir, "out0b")}
	for i := 1; i < batches; i++ {
		o := filepath.Join(dir, fmt.Sprintf("out%d", i))
		if out, err := relayScript(t, []string{"BATCH=2"}, "send", filepath.Join(dev1, "out"), strconv.Itoa(i), o); err != nil || !strings.Contains(out, fmt.Sprintf("batch %d of %d", i, batches)) {
			t.Fatalf("send %d: %v\n%s", i, err, out)
		}
		outs = append(outs, o)
	}
	if out, err := relayScript(t, []string{"BATCH=2"}, "send", filepath.Join(dev1, "out"), strconv.Itoa(batches), filepath.Join(dir, "outx")); err == nil || !strings.Contains(out, fmt.Sprintf("there are %d", batches)) {
		t.Errorf("send of batch %d of %d: %v\n%s", batches, batches, err, out)
	}

	// Here: a damaged part is refused, by name, and taken again whole. Its batch is the
	// first of the newer pack to come, so the first pack's batch 0 is dropped first.
	damaged := filepath.Join(dir, "damaged")
	if err := os.CopyFS(damaged, os.DirFS(outs[1])); err != nil {
		t.Fatal(err)
	}
	parts, _ := filepath.Glob(filepath.Join(damaged, "part-*"))
	b, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(parts[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := relayScript(t, nil, "collect", damaged, relay); err == nil || !strings.Contains(out, filepath.Base(parts[0])+": its bytes or SHA-256") ||
		!strings.Contains(out, "held parts of another pack") {
		t.Errorf("collect of a damaged part: %v\n%s", err, out)
	}
	// A MANIFEST cut short, or one that is not a relay's, is refused before any part.
	for _, c := range []struct{ name, want string }{{"cut", "cut short"}, {"foreign", "not a relay MANIFEST"}} {
		bad := filepath.Join(dir, "manifest-"+c.name)
		if err := os.CopyFS(bad, os.DirFS(outs[0])); err != nil {
			t.Fatal(err)
		}
		m, err := os.ReadFile(filepath.Join(bad, "MANIFEST"))
		if err != nil {
			t.Fatal(err)
		}
		if c.name == "cut" {
			m = m[:len(m)/2]
		} else {
			m = append([]byte("something else\n"), m...)
		}
		if err := os.WriteFile(filepath.Join(bad, "MANIFEST"), m, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := relayScript(t, nil, "collect", bad, relay); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("collect with a MANIFEST %s: %v\n%s", c.name, err, out)
		}
	}
	// The batches, last first; until the last, the relay holds no parts and says so.
	for i := len(outs) - 1; i >= 0; i-- {
		out, err := relayScript(t, nil, "collect", outs[i], relay)
		if err != nil {
			t.Fatalf("collect %d: %v\n%s", i, err, out)
		}
		if i > 0 && !strings.Contains(out, "still to come") {
			t.Errorf("collect %d of %d: %s", i, len(outs), out)
		}
		if st, err := relayScript(t, nil, "status", relay); (err == nil) != (i == 0) {
			t.Errorf("status after collecting batch %d: %v\n%s", i, err, st)
		}
	}
	if _, err := os.Stat(relay + ".incoming"); !os.IsNotExist(err) {
		t.Errorf("a complete collect left %s.incoming: %v", relay, err)
	}

	// The plan: calls that carry the binaries and every part once, within 8 paths and what
	// the working tree leaves of a call's 64 MiB, the MANIFEST in each.
	manifest, err := os.ReadFile(filepath.Join(relay, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	binXZ, err := os.Stat(filepath.Join(relay, "bin.tar.xz"))
	if err != nil {
		t.Fatal(err)
	}
	const limit, margin = 64 << 20, 1 << 20
	room := binXZ.Size() + int64(len(manifest)) + 3*100000
	tree := limit - margin - room
	out, err = relayScript(t, []string{"TREE_BYTES=" + strconv.FormatInt(tree, 10)}, "plan", relay)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	carryLine := regexp.MustCompile(`(?m)^call \d+: carry \[(.*)\]\n +command: (.*)$`)
	calls := carryLine.FindAllStringSubmatch(out, -1)
	for i, c := range calls {
		if chained := strings.Contains(c[2], "relay.sh run /tmp/rocone-relay $OUT"); chained != (i == len(calls)-1) || !strings.HasPrefix(c[2], "scripts/cuda/relay.sh receive ") {
			t.Errorf("planned call %d of %d: command %q (the last receives, then runs)", i+1, len(calls), c[2])
		}
	}
	seen := map[string]int{}
	for _, c := range calls {
		files := strings.Split(strings.ReplaceAll(c[1], `"`, ""), ",")
		var size int64
		hasManifest := false
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatalf("the plan carries %s: %v", f, err)
			}
			size += fi.Size()
			if filepath.Base(f) == "MANIFEST" {
				hasManifest = true
			} else {
				seen[filepath.Base(f)]++
			}
		}
		if len(files) > 8 || size > room || !hasManifest {
			t.Errorf("a planned call carries %d paths, %d bytes (room: %d), MANIFEST %v: %s", len(files), size, room, hasManifest, c[0])
		}
	}
	nparts := strings.Count(string(manifest), "\npart-")
	if len(calls) < 2 || len(seen) != nparts+1 || seen["bin.tar.xz"] != 1 {
		t.Errorf("the plan's %d calls carry %v; want the binaries and %d parts, each once\n%s", len(calls), seen, nparts, out)
	}
	for f, n := range seen {
		if n != 1 {
			t.Errorf("the plan carries %s %d times", f, n)
		}
	}

	// Session 2: each planned call's files arrive in the repository's copy, replaced each
	// call, and are received into the stage; then the run finishes there.
	dev2, copyRoot := filepath.Join(dir, "dev2"), filepath.Join(dir, "copy")
	for _, c := range calls {
		if err := os.RemoveAll(copyRoot); err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(copyRoot, filepath.Base(relay))
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range strings.Split(strings.ReplaceAll(c[1], `"`, ""), ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := relayScript(t, nil, "receive", to, dev2); err != nil {
			t.Fatalf("receive: %v\n%s", err, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dev2, "bin", "COMMIT")); err != nil || strings.TrimSpace(string(b)) != relayCommit {
		t.Fatalf("the received binaries' COMMIT: %q, %v", b, err)
	}
	stageBinaries(t, bin, dev2, relayCommit)

	// Refusals before the run: other binaries; a missing part; a second relay's MANIFEST.
	other := filepath.Join(dir, "other")
	stageBinaries(t, bin, other, strings.Repeat("f", 40))
	if out, err := relayScript(t, []string{"BIN=" + filepath.Join(other, "bin")}, "unpack", dev2, filepath.Join(dir, "w-other")); err == nil || !strings.Contains(out, "trained by commit "+relayCommit) {
		t.Errorf("unpack with other binaries: %v\n%s", err, out)
	}
	gone := filepath.Join(dir, "gone")
	if err := os.CopyFS(gone, os.DirFS(dev2)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(gone, "part-001")); err != nil {
		t.Fatal(err)
	}
	if out, err := relayScript(t, []string{"BIN=" + filepath.Join(dev2, "bin")}, "unpack", gone, filepath.Join(dir, "w-gone")); err == nil || !strings.Contains(out, "lacks 1 parts: part-001") {
		t.Errorf("unpack with a part missing: %v\n%s", err, out)
	}
	mixed := filepath.Join(dir, "mixed")
	if err := os.MkdirAll(mixed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "MANIFEST"), bytes.Replace(manifest, []byte("commit "), []byte("commit 0"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := relayScript(t, nil, "receive", mixed, dev2); err == nil || !strings.Contains(out, "two relays mixed") {
		t.Errorf("receive of another relay's MANIFEST: %v\n%s", err, out)
	}

	out, err = relayScript(t, []string{"BUDGET=600"}, "run", dev2, filepath.Join(dir, "out-final"))
	if err != nil || !strings.Contains(out, "relay: "+filepath.Join(dev2, "work")+" restored") || !strings.Contains(out, "paper-run: wrote "+entry) {
		t.Fatalf("session 2: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out-final", "entry.tgz")); err != nil {
		t.Error(err)
	}
	if out, err := relayScript(t, nil, "unpack", dev2, filepath.Join(dev2, "work")); err == nil || !strings.Contains(out, "already holds a checkpoint") {
		t.Errorf("unpack over a checkpoint: %v\n%s", err, out)
	}
	run := readEntryRun(t, entry)
	if strconv.Itoa(run.Steps) != steps || !strings.HasPrefix(run.Device, "CPU") || strings.Contains(run.Device, "+") || len(run.Commands) < 9 || run.WallTimeS <= 0 {
		t.Errorf("run.json of the relayed run (three calls, sampling in two): %+v", run)
	}

	// The same run, never interrupted, writes the same checkpoint.
	cmd := exec.Command(filepath.Join(stagetest.RepoRoot(t), "scripts", "paper-run.sh"), "fb15k-237", "rocone", "0", filepath.Join(dir, "straight"), filepath.Join(dir, "results-straight", "seed0"))
	cmd.Env = append(append(os.Environ(), trialSettings...), "BIN="+filepath.Join(dev2, "bin"), "STEPS="+steps, "BUDGET=600")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the straight run: %v\n%s", err, out)
	}
	straight, err := os.ReadFile(filepath.Join(dir, "straight", "model.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	relayed, err := os.ReadFile(filepath.Join(dev2, "work", "model.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(straight, relayed) {
		t.Errorf("the relayed run's checkpoint (%d bytes) is not the straight run's (%d bytes)", len(relayed), len(straight))
	}

	// A newer pack whose batches have not all come leaves the complete relay in place.
	if out, err := relayScript(t, []string{"BATCH=2"}, "pack", filepath.Join(dev2, "work"), filepath.Join(dev2, "out")); err != nil {
		t.Fatalf("pack: %v\n%s", err, out)
	}
	newer := filepath.Join(dir, "newer")
	if out, err := relayScript(t, []string{"BATCH=2"}, "send", filepath.Join(dev2, "out"), "0", newer); err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	if out, err := relayScript(t, nil, "collect", newer, relay); err != nil || !strings.Contains(out, "still to come") {
		t.Errorf("collect of a newer pack's first batch: %v\n%s", err, out)
	}
	if now, err := os.ReadFile(filepath.Join(relay, "MANIFEST")); err != nil || !bytes.Equal(now, manifest) {
		t.Errorf("a newer pack's first batch replaced the complete relay's MANIFEST: %v", err)
	}
	if out, err := relayScript(t, nil, "status", relay); err != nil || !strings.Contains(out, "complete") || !strings.Contains(out, ".incoming holds") {
		t.Errorf("status with a newer pack coming: %v\n%s", err, out)
	}
}
