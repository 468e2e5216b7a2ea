package cliargs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// NotEmpty refuses a string flag of flags that is given with an empty value (`--device
// ""`, or `--device "$DEV"` with DEV unset), but for the flags named in except, where ""
// has a meaning of its own (train's `--log ""`: no log) or a check of the stage's that
// says more (embed export's --format, which lists the formats). A string flag that is left out
// means its default (cpu, "none", embedding the queries here); an empty value read as
// that default would hide the mistake, and one read as a path fails later with an
// obscure "open : no such file or directory". The message names the flag, says what it
// wants and what leaving it out means.
func NotEmpty(c *cli.Context, flags []cli.Flag, except ...string) error {
	for _, f := range flags {
		if _, ok := f.(interface{ Get(*cli.Context) string }); !ok {
			continue // not a string flag
		}
		name := f.Names()[0]
		if slices.Contains(except, name) || !c.IsSet(name) || c.String(name) != "" {
			continue
		}
		shown := "--" + name
		for _, n := range f.Names() {
			if len(n) == 1 {
				shown = "-" + n // as the stages' messages name it (-o)
			}
		}
		want := "a value"
		def := ""
		if df, ok := f.(cli.DocGenerationFlag); ok {
			if p, _ := unquoteUsage(df.GetUsage()); p != "" {
				want = article(p) + " " + p
			}
			def = df.GetDefaultText() // the default value, quoted, when it has none
			if u, err := strconv.Unquote(def); err == nil {
				def = u
			}
		}
		switch {
		case isRequired(f) || def == Required:
			return fmt.Errorf("%s \"\": an empty value; give %s", shown, want)
		case isRequiredText(def):
			return fmt.Errorf("%s \"\": an empty value; give %s (%s)", shown, want, def)
		case def != "":
			return fmt.Errorf("%s \"\": an empty value; give %s, or leave %s out (default: %s)", shown, want, shown, def)
		}
		return fmt.Errorf("%s \"\": an empty value; give %s, or leave %s out", shown, want, shown)
	}
	return nil
}

// article is "a" or "an" before a placeholder (a FILE, an i/n).
func article(placeholder string) string {
	if strings.ContainsRune("aeiouAEIOU", rune(placeholder[0])) {
		return "an"
	}
	return "a"
}
