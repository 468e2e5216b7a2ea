package cliargs

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// Positive refuses an integer flag given with a value below 1 where leaving the flag out
// means something no number says (absent: "every core", "none"), so that `--workers 0`
// is an error and not that default by accident.
func Positive(c *cli.Context, name, absent string) error {
	if c.IsSet(name) && c.Int(name) < 1 {
		return fmt.Errorf("--%s %d: want a number of at least 1 (leave --%s out for %s)", name, c.Int(name), name, absent)
	}
	return nil
}
