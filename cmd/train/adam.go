package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/rocone/rocone/pkg/train"
)

// adamSetting is the sparse_adam setting that --adam or --sparse-adam gives, nil when
// neither is given (a fresh run is then dense; a resumed one keeps its checkpoint's).
func adamSetting(c *cli.Context) (*train.Setting, error) {
	var s *train.Setting
	if c.IsSet("adam") {
		switch v := c.String("adam"); v {
		case "dense", "sparse":
			s = &train.Setting{Key: "sparse_adam", Value: v == "sparse", Source: "--adam " + v}
		default:
			return nil, fmt.Errorf("--adam %q: want dense or sparse", v)
		}
	}
	if c.IsSet("sparse-adam") {
		v := c.Bool("sparse-adam")
		if s != nil && s.Value != v {
			return nil, fmt.Errorf("%s and --sparse-adam=%v disagree: give one of them", s.Source, v)
		}
		s = &train.Setting{Key: "sparse_adam", Value: v, Source: fmt.Sprintf("--sparse-adam=%v", v)}
	}
	return s, nil
}
