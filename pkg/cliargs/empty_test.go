package cliargs

import (
	"context"
	"testing"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

// TestNotEmpty: a string flag given an empty value is refused, naming the flag, what it
// wants and what leaving it out means; a flag left out, given a value, allowed to be
// empty, or not a string flag passes.
func TestNotEmpty(t *testing.T) {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "device", Value: "cpu"},
		&cli.StringFlag{Name: "profile", Usage: "write a profile to `FILE`"},
		&cli.StringFlag{Name: "cones", Usage: "cones `FILE`", DefaultText: "embed the queries here"},
		&cli.StringFlag{Name: "checkpoint", Usage: "model `FILE`", DefaultText: Required},
		&cli.StringFlag{Name: "queries", Usage: "queries `FILE`", DefaultText: RequiredWhen("unless --ask")},
		&cli.StringFlag{Name: "data", Usage: "`DIR`", DefaultText: Required},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "`FILE`"},
		&cli.StringFlag{Name: "shard", Usage: "shard `i/n`"},
		&cli.StringFlag{Name: "log"},
		&cli.IntFlag{Name: "dim"},
		altsrc.NewStringFlag(&cli.StringFlag{Name: "matmul", Value: "fp32"}),
	}
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"--device", "cuda", "--profile", "p.md", "--data", "d"}, ""},
		{[]string{"--log", ""}, ""}, // allowed: no log
		{[]string{"--dim", "0"}, ""},
		{[]string{"--device", ""}, `--device "": an empty value; give a value, or leave --device out (default: cpu)`},
		{[]string{"--device="}, `--device "": an empty value; give a value, or leave --device out (default: cpu)`},
		{[]string{"--matmul", ""}, `--matmul "": an empty value; give a value, or leave --matmul out (default: fp32)`},
		{[]string{"--profile", ""}, `--profile "": an empty value; give a FILE, or leave --profile out`},
		{[]string{"--cones", ""}, `--cones "": an empty value; give a FILE, or leave --cones out (default: embed the queries here)`},
		{[]string{"--checkpoint", ""}, `--checkpoint "": an empty value; give a FILE`},
		{[]string{"--queries", ""}, `--queries "": an empty value; give a FILE (required unless --ask)`},
		{[]string{"--data", ""}, `--data "": an empty value; give a DIR`},
		{[]string{"-o", ""}, `-o "": an empty value; give a FILE, or leave -o out`},
		{[]string{"--output", ""}, `-o "": an empty value; give a FILE, or leave -o out`},
		{[]string{"--shard", ""}, `--shard "": an empty value; give an i/n, or leave --shard out`},
	} {
		var err error
		app := &cli.App{Name: "stage", Flags: flags, Action: func(c *cli.Context) error {
			err = NotEmpty(c, flags, "log")
			return nil
		}}
		if runErr := app.RunContext(context.Background(), append([]string{"stage"}, tc.args...)); runErr != nil {
			t.Fatalf("%q: %v", tc.args, runErr)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
