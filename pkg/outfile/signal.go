package outfile

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Main runs a stage's command line, run, and exits: 0 when it returns nil, 1 with
// "stage: error" on stderr when it fails. On SIGINT, SIGTERM or SIGHUP the temporary files in
// flight are removed, a line says which outputs were not written, and the process exits
// with 128 plus the signal's number (130, 143, 129), as a shell reports a process the signal
// killed. run's context is cancelled first, for what it may have started. A panic in
// run removes the temporary files too before it ends the process. SIGPIPE is ignored: a
// closed stderr loses only the progress, a closed stdout fails the stage cleanly.
func Main(stage string, run func(context.Context) error) {
	main(stage, false, run)
}

// MainGraceful is Main for a stage that stops cleanly when its context is cancelled
// (train: at the next step, with a checkpoint): the first SIGINT or SIGTERM cancels the
// context and run's own error says how it ended; a second one acts as in Main.
func MainGraceful(stage string, run func(context.Context) error) {
	main(stage, true, run)
}

func main(stage string, graceful bool, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	// SIGHUP (the terminal or the ssh session gone, a batch system's hang-up) is a request
	// to stop like SIGTERM.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A write to a closed pipe fails with EPIPE instead of killing the process: progress
	// on a stderr whose reader went away (`2>&1 | head -1`) is dropped and the stage still
	// finishes and commits its outputs; standard output as an output fails the stage
	// (Stdout.Err) with its temporary files removed, rather than a SIGPIPE death that
	// leaves them and the output's lock behind.
	signal.Ignore(syscall.SIGPIPE)
	go func() {
		sig := <-sigs
		if graceful {
			fmt.Fprintf(os.Stderr, "%s: %s: stopping at the next step (again to stop at once)\n", stage, sigName(sig))
			cancel()
			sig = <-sigs
		}
		// No cancel here: it would wake a run waiting on ctx, whose own error and exit
		// status 1 could then beat die's message and 128+signal.
		die(stage, sig)
	}()
	defer func() {
		// A panic on this goroutine (on another, the runtime ends the process at once)
		// still removes the temporary files; the panic then goes on, with its stack.
		if r := recover(); r != nil {
			live.Lock()
			removeLive()
			live.Unlock()
			releaseClaims()
			panic(r)
		}
	}()
	err := run(ctx)
	signal.Stop(sigs)
	if err == nil && Stdout.Err() != nil {
		err = fmt.Errorf("writing standard output: %w", Stdout.Err())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", stage, err)
		os.Exit(1)
	}
}

// die removes the live temporary files and ends the process for sig. live stays locked,
// so that no commit renames a file after this has said it was not written.
func die(stage string, sig os.Signal) {
	live.Lock()
	dests := removeLive()
	releaseClaims()
	sort.Strings(dests)
	msg := fmt.Sprintf("%s: stopped by %s", stage, sigName(sig))
	if len(dests) > 0 {
		msg += "; not written: " + strings.Join(dests, ", ")
	}
	fmt.Fprintln(os.Stderr, msg)
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	os.Exit(code)
}

func sigName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// testHoldOutputs, set by the environment variable ROCONE_TEST_HOLD_OUTPUTS, makes
// Create stop for good once it has created an output's temporary file, so that the
// end-to-end tests of every stage can signal a run that certainly has one in flight.
var testHoldOutputs = os.Getenv("ROCONE_TEST_HOLD_OUTPUTS") != ""

func holdForever() {
	for {
		time.Sleep(time.Hour)
	}
}
