// Command measure runs a command and reports its wall time and peak resident memory
// (the kernel's maxrss of the child) on stderr, for the benchmarks in the Makefile.
//
//	go run ./scripts/measure -label "sample test" -- bin/sample generate ...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	label := flag.String("label", "", "name printed with the measurement")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: measure [-label L] -- command args...")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Fprintf(os.Stderr, "measure: %s: wall %.2f s, user %.2f s, sys %.2f s, peak RSS %.1f MiB\n", *label,
		wall.Seconds(), time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds(), float64(ru.Maxrss)/1024)
	if err != nil {
		os.Exit(cmd.ProcessState.ExitCode())
	}
}
