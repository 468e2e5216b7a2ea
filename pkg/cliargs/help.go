package cliargs

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Required is the DefaultText of a flag that the stage itself refuses to run without,
// where urfave/cli's Required cannot say so: it is checked before a subcommand is chosen
// (embed's --checkpoint would be demanded of `embed export` too) and before train's
// --config file is read. Help marks such a flag "(required)", as it marks one with
// Required: true; the stage's own check gives the error.
const Required = "required"

// RequiredWhen is the DefaultText of a flag required only in some uses, e.g.
// RequiredWhen("unless --ask") or RequiredWhen("with --ask"): help marks it
// "(required unless --ask)".
func RequiredWhen(condition string) string { return Required + " " + condition }

// isRequiredText reports whether a DefaultText is Required or RequiredWhen's.
func isRequiredText(s string) bool {
	return s == Required || strings.HasPrefix(s, Required+" ")
}

// FlagString is how every stage's help shows a flag (installed as cli.FlagStringer):
// urfave/cli's layout (names, the usage's `PLACEHOLDER`, the usage), then one note:
//
//   - "(required)", or "(required unless ...)", for a flag marked Required: true or whose
//     DefaultText is Required or RequiredWhen's, and no default: a required flag has none;
//   - otherwise "(default: X)", X the DefaultText or the default value, left out for an
//     empty value and for a switch that is off unless given (urfave/cli prints
//     "(default: false)").
//
// So a default is printed once, in one form: a usage that states its own default
// ("default: every core") gets it as DefaultText instead, and the help test refuses a
// flag whose line says "default" twice.
func FlagString(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	placeholder, usage := unquoteUsage(df.GetUsage())
	if df.TakesValue() && placeholder == "" {
		placeholder = "value"
	}
	note := ""
	text := df.GetDefaultText()
	switch {
	case isRequired(f):
		note = Required
		if isRequiredText(text) {
			note = text
		}
	case isRequiredText(text):
		note = text
	case !df.TakesValue() && text == "false":
	case text != "":
		note = "default: " + text
	}
	if note != "" {
		usage = strings.TrimSpace(usage + " (" + note + ")")
	}
	var names []string
	for _, n := range df.Names() {
		if n == "" {
			continue
		}
		prefix := "--"
		if len(n) == 1 {
			prefix = "-"
		}
		name := prefix + n
		if placeholder != "" {
			name += " " + placeholder
		}
		names = append(names, name)
	}
	head := strings.Join(names, ", ")
	if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
		head += " [ " + head + " ]"
	}
	line := head + "\t" + usage
	if env := df.GetEnvVars(); len(env) > 0 {
		line += " [$" + strings.Join(env, ", $") + "]"
	}
	return line
}

func isRequired(f cli.Flag) bool {
	r, ok := f.(cli.RequiredFlag)
	return ok && r.IsRequired()
}

// unquoteUsage returns the usage's first `quoted` word, the flag's placeholder, and the
// usage without the backquotes (urfave/cli's rule).
func unquoteUsage(usage string) (string, string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+1+j+1:]
}

// prepare adjusts an app's help before it runs: an app without commands gets no help
// command, whose listing would be its help's only COMMANDS entry (and `rank help` would
// print a nameless page); and a usage error (an unknown flag, a value that does not
// parse) is the error alone, on stderr, where urfave/cli would also print the help on
// stdout, into whatever reads a stage's results.
func prepare(app *cli.App) {
	if len(app.Commands) == 0 {
		app.HideHelpCommand = true
	}
	app.OnUsageError = usageError
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = usageError
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
}

func usageError(_ *cli.Context, err error, _ bool) error { return err }

func init() {
	cli.FlagStringer = FlagString
	// An app without commands has options, not "global" ones.
	// (the stages' help test checks that the replacements took).
	cli.AppHelpTemplate = strings.NewReplacer(
		"GLOBAL OPTIONS:", "{{if .VisibleCommands}}GLOBAL OPTIONS{{else}}OPTIONS{{end}}:",
		"[global options]", "{{if .VisibleCommands}}[global options]{{else}}[options]{{end}}",
	).Replace(cli.AppHelpTemplate)
}
