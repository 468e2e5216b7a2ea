package cliargs

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

func testApp() *cli.App {
	return &cli.App{
		Name: "stage",
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
		{[]string{"a.arrow", "--unknown"}, ""}, // left to the app
		{[]string{"--dim", "8", "generate", "--split", "test", "--split", "valid"}, "generate: --split is given twice"},
		{[]string{"-o", "x", "gen", "-o", "y"}, ""}, // the command's own -o
		{[]string{"generate", "--split", "test", "-h"}, ""},
		{[]string{"generate", "f", "--split", "test"}, `generate: --split comes after the file name "f"`},
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
