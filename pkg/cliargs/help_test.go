package cliargs

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

func TestFlagString(t *testing.T) {
	for _, c := range []struct {
		flag cli.Flag
		want string
	}{
		{&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda"}, "--device value\tcpu or cuda (default: \"cpu\")"},
		{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output `FILE`"}, "--output FILE, -o FILE\toutput FILE"},
		{&cli.IntFlag{Name: "seed", Usage: "random seed"}, "--seed value\trandom seed (default: 0)"},
		{&cli.Float64Flag{Name: "skew", Value: 0.6, Usage: "exponent"}, "--skew value\texponent (default: 0.6)"},
		// A switch is off unless given: no "(default: false)"; one that is on says so.
		{&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress"}, "--quiet, -q\tno progress"},
		{&cli.BoolFlag{Name: "colour", Value: true, Usage: "colour"}, "--colour\tcolour (default: true)"},
		// A default in words replaces the value's.
		{&cli.IntFlag{Name: "workers", Usage: "goroutines", DefaultText: "every core"}, "--workers value\tgoroutines (default: every core)"},
		// Required flags say so and show no default, whichever way they are marked.
		{&cli.StringFlag{Name: "data", Required: true, Usage: "dataset `DIR`"}, "--data DIR\tdataset DIR (required)"},
		{&cli.IntFlag{Name: "edges", Required: true, Usage: "edges"}, "--edges value\tedges (required)"},
		{&cli.StringFlag{Name: "format", Value: "auto", Required: true, Usage: "format"}, "--format value\tformat (required)"},
		{&cli.StringFlag{Name: "checkpoint", Usage: "model `FILE`", DefaultText: Required}, "--checkpoint FILE\tmodel FILE (required)"},
		{&cli.StringFlag{Name: "queries", Usage: "queries `FILE`", DefaultText: RequiredWhen("unless --ask")}, "--queries FILE\tqueries FILE (required unless --ask)"},
		{altsrc.NewStringFlag(&cli.StringFlag{Name: "train", Usage: "train `FILE`", DefaultText: Required}), "--train FILE\ttrain FILE (required)"},
		// Marked both ways, the words of the condition are kept.
		{&cli.StringFlag{Name: "cones", Required: true, Usage: "cones `FILE`", DefaultText: RequiredWhen("unless --ask")}, "--cones FILE\tcones FILE (required unless --ask)"},
		{altsrc.NewIntFlag(&cli.IntFlag{Name: "dim", Value: 64, Usage: "dimension"}), "--dim value\tdimension (default: 64)"},
		// A word that merely begins like "required" is a default.
		{&cli.StringFlag{Name: "mode", Usage: "mode", DefaultText: "requiredness"}, "--mode value\tmode (default: requiredness)"},
		// urfave/cli's other decorations are kept.
		{&cli.StringSliceFlag{Name: "tag", Usage: "a tag"}, "--tag value [ --tag value ]\ta tag"},
		{&cli.StringFlag{Name: "home", Usage: "home", EnvVars: []string{"HOME_DIR", "HOME"}}, "--home value\thome [$HOME_DIR, $HOME]"},
		{&cli.StringFlag{Name: "odd", Usage: "an `unclosed quote"}, "--odd value\tan `unclosed quote"},
		// An empty placeholder: the backquotes go, the placeholder is the default one.
		{&cli.StringFlag{Name: "empty", Usage: "an `` empty placeholder"}, "--empty value\tan  empty placeholder"},
	} {
		if got := c.flag.String(); got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.flag.Names(), got, c.want)
		}
	}
}

// TestAppHelp: an app without commands shows neither a COMMANDS section (which would list
// only urfave/cli's help command) nor "global" options; an app with commands keeps both.
func TestAppHelp(t *testing.T) {
	help := func(app *cli.App, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		app.Writer = &out
		if err := Run(context.Background(), app, append([]string{app.Name}, args...)); err != nil {
			t.Fatalf("%s %q: %v", app.Name, args, err)
		}
		return out.String()
	}
	flat := &cli.App{Name: "rank", Flags: []cli.Flag{&cli.StringFlag{Name: "checkpoint", Required: true}}, Action: func(*cli.Context) error { return nil }}
	got := help(flat, "--help")
	for _, bad := range []string{"COMMANDS:", "GLOBAL OPTIONS:", "[global options]", "command [command options]"} {
		if strings.Contains(got, bad) {
			t.Errorf("help of an app without commands has %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "\nOPTIONS:\n") || !strings.Contains(got, "rank [options]") || !strings.Contains(got, "(required)") {
		t.Errorf("help of an app without commands:\n%s", got)
	}

	nested := testApp()
	got = help(nested, "--help")
	for _, want := range []string{"COMMANDS:", "generate, gen", "GLOBAL OPTIONS:", "stage [global options] command [command options]"} {
		if !strings.Contains(got, want) {
			t.Errorf("help of an app with commands lacks %q:\n%s", want, got)
		}
	}
	got = help(testApp(), "generate", "--help")
	if strings.Contains(got, "COMMANDS:") || !strings.Contains(got, "--split value") {
		t.Errorf("help of a command without subcommands:\n%s", got)
	}
}
