package cliargs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

func testApp() *cli.App {
	return &cli.App{
		Name:   "stage",
		Action: func(*cli.Context) error { return nil }, // takes files, as metrics does
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
			&cli.IntFlag{Name: "dim"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
			&cli.StringSliceFlag{Name: "tag"},
			altsrc.NewStringFlag(&cli.StringFlag{Name: "preset"}),
		},
		Commands: []*cli.Command{{
			Name:    "generate",
			Aliases: []string{"gen"},
			Flags:   []cli.Flag{&cli.StringFlag{Name: "split"}, &cli.StringFlag{Name: "output", Aliases: []string{"o"}}},
		}, {
			Name:   "merge",
			Flags:  []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true}, &cli.IntFlag{Name: "top", Required: true}},
			Action: func(*cli.Context) error { return nil },
		}},
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"-o", "x", "--dim", "8", "a", "b"}, ""},
		{[]string{"--dim", "8", "--dim", "16"}, "--dim is given twice (--dim 8, then --dim 16): give it once"},
		{[]string{"--dim=8", "--dim", "16"}, "--dim is given twice (--dim=8, then --dim 16)"},
		{[]string{"-o", "x", "--output=y"}, "--output is given twice (-o x, then --output=y)"},
		{[]string{"-q", "--quiet", "a"}, "--quiet is given twice (-q, then --quiet)"},
		{[]string{"-q", "-o", "-q"}, ""}, // -q is -o's value
		{[]string{"--tag", "a", "--tag", "b"}, ""},
		{[]string{"--preset", "x", "--preset", "y"}, "--preset is given twice"},
		{[]string{"a.arrow", "-o", "x"}, `-o comes after the file name "a.arrow"`},
		{[]string{"a.arrow", "--", "-o"}, ""},
		{[]string{"-", "b"}, ""},
		{[]string{"-", "-o", "x"}, `-o comes after the file name "-"`},             // "-" (stdin) is a file name
		{[]string{"--bogus", "--dim", "8", "--dim", "16"}, "--dim is given twice"}, // an unknown flag does not end the check
		{[]string{"--help", "--dim", "8", "--dim", "16"}, ""},                      // help: nothing runs
		{[]string{"-h", "--dim", "8", "--dim", "16"}, ""},
		{[]string{"a.arrow", "--unknown"}, ""}, // left to the app
		{[]string{"--dim", "8", "generate", "--split", "test", "--split", "valid"}, "generate: --split is given twice"},
		{[]string{"-o", "x", "gen", "-o", "y"}, ""}, // the command's own -o
		{[]string{"generate", "--split", "test", "-h"}, ""},
		{[]string{"generate", "f", "--split", "test"}, `generate: --split comes after the file name "f"`},
		{[]string{"merge", "-o", "x", "--top", "3", "a"}, ""},
		{[]string{"merge", "--top", "3"}, `Required flag "output" not set`},
		{[]string{"merge", "a", "b"}, `Required flags "output, top" not set`},
		{[]string{"merge", "-h"}, ""},
	} {
		err := Check(testApp(), append([]string{"stage"}, c.args...))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestNotACommand: where only commands are taken (an app without an action of its own,
// as sample), any other argument is refused by name, with the commands, rather than
// urfave/cli's "No help topic" and exit status 3.
func TestNotACommand(t *testing.T) {
	app := testApp()
	app.Action = nil
	sub := func() []*cli.Command {
		return []*cli.Command{{Name: "sub", Action: func(*cli.Context) error { return nil }}}
	}
	app.Commands = append(app.Commands,
		&cli.Command{Name: "group", Subcommands: sub()},
		&cli.Command{Name: "acting", Subcommands: sub(), Action: func(*cli.Context) error { return nil }})
	for _, c := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"frob"}, `"frob" is not a command; the commands: generate, merge`},
		{[]string{"-q", "frob", "generate"}, `"frob" is not a command`},
		{[]string{"generate", "f"}, ""}, // generate's own argument, left to it
		{[]string{"gen"}, ""},
		{[]string{"help"}, ""},
		{[]string{"h", "merge"}, ""},
		{[]string{"merge", "-o", "x", "--top", "3", "f"}, ""}, // merge has an action: it takes files
		{[]string{"group", "frob"}, `group: "frob" is not a command; the commands: sub`},
		{[]string{"group", "sub", "f"}, ""},
		{[]string{"acting", "f"}, ""}, // commands of its own, and an action that takes files
		{[]string{"acting", "sub", "f"}, ""},
		{[]string{}, ""},
	} {
		err := Check(app, append([]string{"stage"}, c.args...))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestMissingRequiredPrintsNoHelp: a missing required flag, an unknown flag or a value that
// does not parse is an error and nothing on stdout (urfave/cli would print the command's
// help there, into a pipe that expects results).
func TestMissingRequiredPrintsNoHelp(t *testing.T) {
	stdout, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	defer func() { os.Stdout = saved }()
	for _, c := range []struct{ args, want string }{
		{"merge --top 1 a", `Required flag "output" not set`},
		{"merge --bogus", "flag provided but not defined: -bogus"},
		{"merge -o x --top x", `invalid value "x" for flag -top`},
		{"--dim x", `invalid value "x" for flag -dim`},
		{"--bogus a", "flag provided but not defined: -bogus"},
	} {
		os.Stdout = stdout // where urfave/cli's help printer writes
		err = Run(context.Background(), testApp(), append([]string{"stage"}, strings.Fields(c.args)...))
		os.Stdout = saved
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.args, err, c.want)
		}
		if b, _ := os.ReadFile(stdout.Name()); len(b) > 0 {
			t.Errorf("%s: printed on stdout:\n%s", c.args, b)
		}
	}
}

// TestVersion: --version (and not -v) prints the stage's name and Version(), which names
// the Go version and either the commit or why there is none.
func TestVersion(t *testing.T) {
	v := Version()
	if !strings.Contains(v, runtime.Version()) || !(strings.HasPrefix(v, "commit ") || strings.HasPrefix(v, "unknown")) {
		t.Errorf("Version() = %q", v)
	}
	app := testApp()
	app.Version = v
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"stage", "--version"}); err != nil || out.String() != "stage "+v+"\n" {
		t.Errorf("--version: %q, %v", out.String(), err)
	}
	app.Flags = append(app.Flags, &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}})
	app.Action = func(*cli.Context) error { return nil }
	out.Reset()
	if err := app.Run([]string{"stage", "-v"}); err != nil || strings.Contains(out.String(), v) {
		t.Errorf("-v is the stage's own flag, not --version: %q, %v", out.String(), err)
	}
}

// TestVersionOf: the commit, its date and the Go version from the build information; a
// tree with uncommitted changes says so; a build without version control information or
// without build information at all says which.
func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		settings []debug.BuildSetting
		noInfo   bool
		want     string
	}{
		{vcs("vcs.revision", "5bfd869", "vcs.time", "2026-11-28T19:56:46Z", "vcs.modified", "false"), false,
			"commit 5bfd869 (2026-11-28T19:56:46Z), go1.26.8"},
		{vcs("-tags", "cuda", "vcs.modified", "true", "vcs.revision", "5bfd869", "vcs.time", "2026-11-28T19:56:46Z"), false,
			"commit 5bfd869 + uncommitted changes (2026-11-28T19:56:46Z), go1.26.8"},
		{vcs("-tags", "cuda"), false, "unknown commit (built without version control information), go1.26.8"},
		{nil, true, "unknown (no build information)"},
	} {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: tc.settings}
		if tc.noInfo {
			bi = nil
		}
		if got := version(bi, !tc.noInfo); got != tc.want {
			t.Errorf("version(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}

// TestPositive: an integer flag left out passes (its absent meaning), one given below 1 is
// refused naming that meaning, one given 1 or more passes.
func TestPositive(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"--workers", "1"}, ""},
		{[]string{"--workers", "16"}, ""},
		{[]string{"--workers", "0"}, "--workers 0: want a number of at least 1 (leave --workers out for every core)"},
		{[]string{"--workers=-2"}, "--workers -2: want a number of at least 1 (leave --workers out for every core)"},
	} {
		var err error
		app := &cli.App{Name: "stage", Flags: []cli.Flag{&cli.IntFlag{Name: "workers"}}, Action: func(c *cli.Context) error {
			err = Positive(c, "workers", "every core")
			return nil
		}}
		if runErr := app.Run(append([]string{"stage"}, tc.args...)); runErr != nil {
			t.Fatalf("%q: %v", tc.args, runErr)
		}
		if got := fmt.Sprint(err); (tc.want == "") != (err == nil) || (err != nil && got != tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// FuzzCheck: any command line is checked without a panic, and one that begins with a flag
// given twice is refused for it whatever follows.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"-o x --dim 8 a", "--dim 8 --dim 9", "a -o x", "generate --split a --split b", "-- -o", "-o", "--dim=", "gen -o", "-h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rest := strings.Fields(line)
		Check(testApp(), append([]string{"stage"}, rest...))
		err := Check(testApp(), append([]string{"stage", "--dim", "1", "--dim=2"}, rest...))
		if err == nil || !strings.Contains(err.Error(), "--dim is given twice (--dim 1, then --dim=2)") {
			t.Fatalf("%q after --dim 1 --dim=2: %v", line, err)
		}
	})
}
