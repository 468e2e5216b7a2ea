// Package cliargs is what every stage's command line shares beyond urfave/cli: it refuses
// the mistakes urfave/cli lets pass, a flag given twice (the last value silently wins) and
// a flag after the first file name (read as another file name), before any work is done;
// it gives the --version every stage prints; and it shapes every stage's help alike: each
// default printed once, required flags marked, no COMMANDS section without commands.
package cliargs

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// Run checks args (Check), then runs app with them, its help shown as every stage's is
// (FlagString; no help command where the app has no commands).
func Run(ctx context.Context, app *cli.App, args []string) error {
	if err := Check(app, args); err != nil {
		return err
	}
	prepare(app)
	return app.RunContext(ctx, args)
}

// Check walks args (args[0] is the program) as app parses them: the app's flags, then a
// command's name descends to its flags, and so on. It refuses
//
//   - a flag given more than once, under any of its names (--output and -o), unless it
//     takes several values (a slice flag);
//   - a token naming a flag of the command after its first positional argument (a file
//     name): urfave/cli stops reading flags there and would take the flag for a file;
//   - a required flag of the command not given (missingRequired);
//   - an argument that names no command where only commands are taken (`sample frob`),
//     which urfave/cli answers with "No help topic" and exit status 3.
//
// Unknown flags and missing values are left to app, which reports them.
func Check(app *cli.App, args []string) error {
	if len(args) == 0 {
		return nil
	}
	flags, cmds := app.Flags, app.Commands
	hasAction := app.Action != nil
	path := "" // the command path below the app: "generate", "export"
	where := func() string {
		if path == "" {
			return ""
		}
		return path + ": "
	}
	seen := map[string]string{} // canonical name -> the token that gave it
	positional := ""
	unknown := false // a flag the command does not have: the app reports it first
	for i := 1; i < len(args); i++ {
		tok := args[i]
		if tok == "--" {
			return nil
		}
		if len(tok) > 1 && strings.HasPrefix(tok, "-") {
			name, hasValue := strings.TrimLeft(tok, "-"), false
			if k := strings.IndexByte(name, '='); k >= 0 {
				name, hasValue = name[:k], true
			}
			f := find(flags, name)
			if f == nil {
				if name == "help" || name == "h" {
					return nil
				}
				unknown = true
				continue
			}
			canon := f.Names()[0]
			if positional != "" {
				return fmt.Errorf("%s%s comes after the file name %q, where it would be read as a file name: put the flags first (%s [flags] FILES...)",
					where(), tok, positional, strings.TrimSpace(app.Name+" "+path))
			}
			if prev, ok := seen[canon]; ok && !isSlice(f) {
				return fmt.Errorf("%s--%s is given twice (%s, then %s): give it once", where(), canon, prev, display(tok, args, i, takesValue(f) && !hasValue))
			}
			seen[canon] = display(tok, args, i, takesValue(f) && !hasValue)
			if takesValue(f) && !hasValue {
				i++ // its value
			}
			continue
		}
		if positional == "" {
			if c := findCommand(cmds, tok); c != nil {
				flags, cmds, path = c.Flags, c.Subcommands, strings.TrimSpace(path+" "+c.Name)
				hasAction = c.Action != nil
				seen = map[string]string{}
				continue
			}
			if !hasAction && len(cmds) > 0 && tok != "help" && tok != "h" {
				return fmt.Errorf("%s%q is not a command; the commands: %s", where(), tok, commandNames(cmds))
			}
			positional = tok
		}
	}
	if unknown {
		return nil
	}
	return missingRequired(flags, seen)
}

// missingRequired refuses the command's required flags that were not given, with
// urfave/cli's own message: urfave/cli would also print the command's help on stdout,
// where a stage's results go (`sample merge | ...`).
func missingRequired(flags []cli.Flag, seen map[string]string) error {
	var missing []string
	for _, f := range flags {
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			if _, ok := seen[f.Names()[0]]; !ok {
				missing = append(missing, f.Names()[0])
			}
		}
	}
	return MissingFlags(missing)
}

// MissingFlags is the error of required flags not given, in urfave/cli's words (nil for
// none), for a stage that checks its required flags itself.
func MissingFlags(names []string) error {
	switch len(names) {
	case 0:
		return nil
	case 1:
		//lint:ignore ST1005 urfave/cli's own message, word for word, so that every stage says it alike
		return fmt.Errorf("Required flag %q not set", names[0])
	}
	//lint:ignore ST1005 as above
	return fmt.Errorf("Required flags %q not set", strings.Join(names, ", "))
}

func display(tok string, args []string, i int, separate bool) string {
	if separate && i+1 < len(args) {
		return tok + " " + args[i+1]
	}
	return tok
}

func find(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func commandNames(cmds []*cli.Command) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return true
}

func isSlice(f cli.Flag) bool {
	s, ok := f.(cli.DocGenerationSliceFlag)
	return ok && s.IsSliceFlag()
}

// Version is what `STAGE --version` prints: the commit the binary was built from (with
// "+ uncommitted changes" when the tree was dirty), its date and the Go version, read from
// the build information Go records; a binary built outside a git checkout says so.
func Version() string {
	return version(debug.ReadBuildInfo())
}

// version is Version for the build information bi (ok: Go recorded some).
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown (no build information)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " + uncommitted changes"
			}
		}
	}
	if rev == "" {
		return "unknown commit (built without version control information), " + bi.GoVersion
	}
	return fmt.Sprintf("commit %s%s (%s), %s", rev, dirty, at, bi.GoVersion)
}

func init() {
	// --version only: urfave/cli's default also takes -v, which a stage may want.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the commit this binary was built from"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "%s %s\n", c.App.Name, c.App.Version) }
}
