// Command train trains a RoConE or ConE model on a train queries artifact and writes a
// checkpoint artifact and a train-log artifact (see pkg/artifact for both schemas and
// pkg/train for the loop).
//
// Configuration precedence: command-line flags, then the --config file (YAML or TOML,
// keys named like the flags), then the --preset, then the defaults (train.Default).
// With --resume the checkpoint's configuration is used; a flag, config-file value or
// preset that contradicts it is an error, except --steps (the total, which may be
// raised), --eval-every and --checkpoint-every.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/rocone/rocone/pkg/cliargs"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/train"
)

func main() {
	// The first SIGINT or SIGTERM ends the run at the next step, with a checkpoint; a
	// second ends it at once, removing unfinished outputs (package outfile).
	outfile.MainGraceful("train", func(ctx context.Context) error { return cliargs.Run(ctx, app(), os.Args) })
}

// configFlags are the flags that set a Config value, with its key, in the order they are
// checked.
var configFlags = [][2]string{
	{"model", "model"}, {"dim", "dim"}, {"batch", "batch"}, {"negatives", "negatives"},
	{"gamma", "gamma"}, {"lr", "lr"}, {"lambda", "lambda"}, {"dropout", "dropout"},
	{"steps", "steps"}, {"eval-every", "eval_every"}, {"checkpoint-every", "checkpoint_every"},
	{"seed", "seed"}, {"cone-hidden", "cone_hidden"}, {"matmul", "matmul"},
	{"keep-best", "keep_best"}, {"best-metric", "best_metric"}, {"patience", "patience"},
}

func flags() []cli.Flag {
	d := train.Default()
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "read flag values from a YAML or TOML `FILE` (keys named like the flags); flags given on the command line win"},
		altsrc.NewStringFlag(&cli.StringFlag{Name: "train", Usage: "train queries `FILE` (a queries artifact, split train; - for stdin)", DefaultText: cliargs.Required}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "valid", Usage: "validate on this queries `FILE` (same dataset; - for stdin, when --train is not) every --eval-every steps and at the end"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "checkpoint", Usage: "checkpoint `FILE` to write (and with --resume, to continue)", DefaultText: cliargs.Required}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "resume", Usage: "continue the run in --checkpoint, with its configuration, up to --steps"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "auto-resume", Usage: "continue the checkpoint (--partial if there is one) when it holds an unfinished run of this configuration and train file, else start afresh: rerunning an interrupted command continues it"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "partial", Usage: "keep the checkpoints of the unfinished run in `FILE` and write --checkpoint only when the run is finished (then FILE is removed), so that --checkpoint exists only as a finished model (pipelines)"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "overwrite", Usage: "replace a checkpoint or log of another run (another configuration) at --checkpoint/--log; without it that is an error"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "log", Usage: "train-log `FILE` (\"\" for none)", DefaultText: "the checkpoint's name with -log.arrow"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "preset", Usage: "the papers' reproduction configuration `NAME` (docs/training.md §5.3): " + strings.Join(train.PresetNames(), " or ") + " (nell-995 too)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "model", Value: d.Model, Usage: "the model `VARIANT`: " + model.VariantNames(", ")}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "dim", Value: d.Dim, Usage: "embedding dimension `D`"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "batch", Value: d.Batch, Usage: "`N` queries per batch (each of the three updates of a step)"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "negatives", Value: d.Negatives, Usage: "`N` negatives per query"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "gamma", Value: d.Gamma, Usage: "margin `γ`"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "lr", Value: d.LR, Usage: "initial learning `RATE` (÷5 at steps//2, then every ×1.5)"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "lambda", Value: d.Lambda, Usage: "weight `λ` of the inside distance"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "dropout", Value: d.Dropout, Usage: "intersection dropout `P` on input apertures"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "steps", Value: d.Steps, Usage: "total training steps `N` (max_steps; three updates each); with --resume, may be raised"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "eval-every", Value: d.EvalEvery, Usage: "validate every `N` steps (×4 from step 2·steps//3); 0: only at the end"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "checkpoint-every", Value: d.CheckpointEvery, Usage: "write the checkpoint and log every `N` steps (and at the end); 0: only at the end"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "keep-best", Usage: "also keep the checkpoint of the best validation (by --best-metric) at --best"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "best", Usage: "write the best checkpoint of --keep-best to `FILE` (default: the checkpoint's name with .best before .arrow)", TakesFile: true}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "best-metric", Usage: "what the best validation is, `MEASURE[:GROUP]`: MEASURE mrr, hits@1, hits@3 or hits@10; GROUP epfo (the EPFO average), neg, avg (every type) or a query type such as 2p; e.g. hits@10:2p", DefaultText: "mrr:epfo"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "patience", Usage: "stop after `N` validations in a row without an improvement of --best-metric (early stopping); 0: never"}),
		altsrc.NewUint64Flag(&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "random seed `N` (initialisation, sampling, dropout)"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "cone-hidden", Value: d.ConeHidden, Usage: "hidden width `N` of ConE's projection MLP; 0: 1600 (cone only)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "matmul", Value: "fp32", Usage: "`PRECISION` of the linear layers' matrix products (ConE's projection MLP, the intersection): fp32, or tf32 (factors rounded to TF32: tensor cores on CUDA, PyTorch's allow_tf32); stored in the checkpoint"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "workers", Usage: "`N` goroutines for the optimiser, the kernels and validation; does not change results", DefaultText: "every core"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "device", Value: "cpu", Usage: "`DEVICE`: cpu or cuda"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "adam", Usage: "`KIND`: dense (the paper's) or sparse: update only the table rows each batch touched (CPU only; a deviation, see the README)", DefaultText: "dense"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "sparse-adam", Usage: "the same as --adam sparse"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "profile", Usage: "write a device profile of --profile-steps to `FILE` (a Markdown roofline table per kernel) and its CSV beside it (.csv for .md); needs --device cuda"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "profile-steps", Value: "5-14", Usage: "the steps --profile times, `FROM-TO` (both included; the steps before are the warm-up)"}),
		// For the tests of this command: block once a checkpoint with this many steps is
		// written, so that a test can kill a run that is certainly not finished.
		&cli.IntFlag{Name: "test-hang-after", Hidden: true},
		// For the pipelines' resume tests: sleep this long after every step, so that a run
		// of a few steps lasts long enough to be interrupted. Results are unchanged.
		&cli.DurationFlag{Name: "test-step-sleep", Hidden: true},
	}
}

func app() *cli.App {
	fl := flags()
	return &cli.App{
		Name:    "train",
		Version: cliargs.Version(),
		Usage:   "train a RoConE or ConE model on a train queries file",
		UsageText: "train --train FILE|- [--valid FILE|-] --checkpoint FILE [--resume] [--preset NAME] [--config FILE] [options]\n" +
			"train import-qecone --from PATH -o FILE [command options]",
		Flags:    fl,
		Commands: []*cli.Command{importCommand()}, // import.go
		Before: func(c *cli.Context) error {
			// An empty value would pass for the flag's default (--device '' for cpu,
			// --best '' for the checkpoint's name with .best); only --log '' means
			// something of its own, no log.
			if err := cliargs.NotEmpty(c, fl, "log"); err != nil {
				return err
			}
			if !c.IsSet("config") {
				return nil
			}
			src, err := configSource(c.String("config"), fl)
			if err != nil {
				return err
			}
			return altsrc.ApplyInputSourceValues(c, src, fl)
		},
		Action: action,
	}
}

func action(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", c.Args().First())
	}
	for _, req := range []string{"train", "checkpoint"} {
		if c.String(req) == "" {
			return fmt.Errorf("--%s is required", req)
		}
	}
	if err := cliargs.Positive(c, "workers", "every core"); err != nil {
		return err
	}
	if c.Bool("resume") && c.Bool("overwrite") {
		return fmt.Errorf("--resume continues the checkpoint, --overwrite replaces it: give one of them")
	}
	if c.Bool("resume") && c.Bool("auto-resume") {
		return fmt.Errorf("--resume always continues the checkpoint, --auto-resume only when it holds this run unfinished: give one of them")
	}
	prof, err := profileOptions(c)
	if err != nil {
		return err
	}
	dev, err := device.Open(c.String("device"), c.Int("workers"))
	if err != nil {
		return err
	}

	var settings []train.Setting
	for _, fk := range configFlags {
		flag, key := fk[0], fk[1]
		if c.IsSet(flag) {
			settings = append(settings, train.Setting{Key: key, Value: flagValue(c, flag), Source: "--" + flag})
		}
	}
	if s, err := adamSetting(c); err != nil { // adam.go
		return err
	} else if s != nil {
		settings = append(settings, *s)
	}
	preset := c.String("preset")
	var cfg train.Config
	if c.Bool("resume") {
		source := train.ResumeSource(train.Options{Checkpoint: c.String("checkpoint"), Partial: c.String("partial")})
		saved, done, err := train.ReadCheckpointConfig(source)
		if errors.Is(err, os.ErrNotExist) {
			if c.String("partial") != "" {
				return fmt.Errorf("--resume: no checkpoint at --partial %s or --checkpoint %s", c.String("partial"), c.String("checkpoint"))
			}
			return fmt.Errorf("--resume: no checkpoint at %s", c.String("checkpoint"))
		}
		if err != nil {
			return err
		}
		if preset != "" {
			p, ok := train.Presets[train.PresetName(preset)]
			if !ok {
				return fmt.Errorf("unknown preset %q (known: %s)", preset, strings.Join(train.PresetNames(), ", "))
			}
			for _, fk := range configFlags {
				if v, ok := p[fk[1]]; ok && !settingGiven(settings, fk[1]) {
					settings = append(settings, train.Setting{Key: fk[1], Value: v, Source: "--preset " + preset})
				}
			}
		}
		if cfg, err = train.ResumeConfig(saved, done, settings); err != nil {
			return err
		}
	} else if cfg, err = train.NewConfig(preset, settings); err != nil {
		return err
	}

	logPath := c.String("log")
	if !c.IsSet("log") {
		logPath = strings.TrimSuffix(c.String("checkpoint"), ".arrow") + "-log.arrow"
	}
	var progress io.Writer = os.Stderr
	if c.Bool("quiet") {
		progress = nil
	}
	opts := train.Options{
		Train: c.String("train"), Valid: c.String("valid"), Checkpoint: c.String("checkpoint"), Log: logPath,
		Partial: c.String("partial"), Best: c.String("best"),
		Resume: c.Bool("resume"), AutoResume: c.Bool("auto-resume"), Config: c.String("config"), Overwrite: c.Bool("overwrite"),
		Kernels: dev.Kernels, Device: dev.Train, Workers: c.Int("workers"), Progress: progress, Warnings: os.Stderr,
		Profile: prof,
	}
	if d := c.Duration("test-step-sleep"); d > 0 {
		opts.AfterStep = func(int) { time.Sleep(d) }
	}
	if n := c.Int("test-hang-after"); n > 0 {
		opts.AfterCheckpoint = func(done int) {
			for done >= n {
				time.Sleep(time.Hour)
			}
		}
	}
	res, err := train.Run(c.Context, cfg, opts)
	if err != nil {
		return err
	}
	if res.Interrupted {
		return fmt.Errorf("interrupted: %s holds %d of %d steps; continue with --resume (or run the same command with --auto-resume)",
			res.Written, res.StepsDone, cfg.Steps)
	}
	return nil
}

// profileOptions reads --profile and --profile-steps.
func profileOptions(c *cli.Context) (train.ProfileOptions, error) {
	path := c.String("profile")
	if path == "" {
		if c.IsSet("profile-steps") {
			return train.ProfileOptions{}, fmt.Errorf("--profile-steps without --profile: give the profile's FILE")
		}
		return train.ProfileOptions{}, nil
	}
	if c.String("device") != "cuda" {
		return train.ProfileOptions{}, fmt.Errorf("--profile %s: profiling times the device's kernels: it needs --device cuda (not %s)", path, c.String("device"))
	}
	from, steps, err := train.ParseProfileSteps(c.String("profile-steps"))
	if err != nil {
		return train.ProfileOptions{}, err
	}
	return train.ProfileOptions{Path: path, From: from, Steps: steps, Command: strings.Join(append([]string{"train"}, os.Args[1:]...), " ")}, nil
}

func settingGiven(settings []train.Setting, key string) bool {
	for _, s := range settings {
		if s.Key == key {
			return true
		}
	}
	return false
}

// flagValue returns a flag's value in its own type.
func flagValue(c *cli.Context, name string) any {
	switch name {
	case "model", "matmul", "best-metric":
		return c.String(name)
	case "keep-best":
		return c.Bool(name)
	case "gamma", "lr", "lambda", "dropout":
		return c.Float64(name)
	case "seed":
		return c.Uint64(name)
	}
	return c.Int(name)
}
