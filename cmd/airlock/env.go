package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/docker/go-units"
	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

const envUsage = `usage:
  airlock env build [flags] FILE   build the environment a spec file describes (a no-op when unchanged)
  airlock env list [flags]         name, hash, packages, size and build time of every environment
  airlock env rm [flags] NAME      remove an environment and its images
flags: --data-dir DIR | --redis URL (the state store, as serve's), --python-image, --shell-image,
       build: --mirror URL, --index-url URL, -v (stream the build log), --json
`

// envFlags are the flags of `airlock env`.
type envFlags struct {
	dataDir, redisURL, python, shell, runtime string
	mirror, indexURL                          string
	verbose, asJSON                           bool
}

// runEnv is `airlock env build|list|rm`. Exit codes: 0 done, 1 the build
// or the command failed, 2 a usage error or an invalid spec.
func runEnv(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprint(stderr, envUsage)
			return 2
		}
		fmt.Fprint(stdout, envUsage)
		return 0
	}
	sub := args[0]
	fs := flag.NewFlagSet("airlock env "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f envFlags
	fs.StringVar(&f.dataDir, "data-dir", state.DefaultDataDir(), "directory of the embedded state store, as serve's (env AIRLOCK_DATA_DIR)")
	fs.StringVar(&f.redisURL, "redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the shared state store, as serve's (env AIRLOCK_REDIS_URL)")
	fs.StringVar(&f.python, "python-image", envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), "image of the python built-in (env AIRLOCK_PYTHON_IMAGE)")
	fs.StringVar(&f.shell, "shell-image", envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest"), "image of the shell built-in (env AIRLOCK_SHELL_IMAGE)")
	fs.StringVar(&f.runtime, "runtime", os.Getenv("AIRLOCK_RUNTIME"), "OCI runtime of the check sandboxes (env AIRLOCK_RUNTIME)")
	if sub == "build" {
		fs.StringVar(&f.mirror, "mirror", os.Getenv("AIRLOCK_DEBIAN_MIRROR"), "Debian mirror apt uses (default: the one the base image was built from; env AIRLOCK_DEBIAN_MIRROR)")
		fs.StringVar(&f.indexURL, "index-url", os.Getenv("AIRLOCK_PIP_INDEX_URL"), "package index for pip requirements of specs that name none (never PyPI by default; env AIRLOCK_PIP_INDEX_URL)")
		fs.BoolVar(&f.verbose, "v", false, "print the build's log as it comes")
	}
	if sub == "build" || sub == "list" {
		fs.BoolVar(&f.asJSON, "json", false, "print the record(s) as JSON")
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	want := map[string]int{"build": 1, "list": 0, "rm": 1}
	n, known := want[sub]
	if !known || fs.NArg() != n {
		fmt.Fprint(stderr, envUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, closeAll, err := f.manager()
	if err != nil {
		fmt.Fprintf(stderr, "airlock env %s: %v\n", sub, err)
		return 1
	}
	defer closeAll()
	switch sub {
	case "build":
		return envBuild(ctx, m, fs.Arg(0), f, stdout, stderr)
	case "list":
		return envList(ctx, m, f.asJSON, stdout, stderr)
	default:
		if err := m.Remove(ctx, fs.Arg(0)); err != nil {
			fmt.Fprintf(stderr, "airlock env rm: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "removed %s\n", fs.Arg(0))
		return 0
	}
}

// manager opens the state store and the Docker client and returns the
// environments manager on them.
func (f envFlags) manager() (*builder.Manager, func(), error) {
	var rdb *redis.Client
	if f.redisURL != "" {
		opt, err := redis.ParseURL(f.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis %q: %w", f.redisURL, err)
		}
		rdb = redis.NewClient(opt)
	}
	store, err := openState(rdb, f.dataDir)
	if err != nil {
		return nil, nil, err
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	cfg := builder.DefaultConfig()
	cfg.Bases = map[string]string{environments.Python: f.python, environments.Shell: f.shell}
	cfg.Mirror, cfg.IndexURL = f.mirror, f.indexURL
	scfg := sandbox.DefaultConfig()
	scfg.Runtime = f.runtime
	m := builder.New(cfg, dc, store, builder.SandboxRunners(dc, scfg, nil), nil)
	return m, func() {
		_ = store.Close()
		if rdb != nil {
			_ = rdb.Close()
		}
		_ = dc.Close()
	}, nil
}

// envBuild is `airlock env build FILE`: a progress bar (or step lines when
// stderr is not a terminal), the log with -v, and the failing step named.
func envBuild(ctx context.Context, m *builder.Manager, path string, f envFlags, stdout, stderr io.Writer) int {
	src, err := environments.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "airlock env build: %s: %v\n", path, err)
		return 2
	}
	p := newBuildPrinter(stderr, f.verbose, !f.asJSON && isTerminal(stderr))
	rec, built, err := m.Build(ctx, src, p.event)
	p.done()
	if err != nil {
		fmt.Fprintf(stderr, "airlock env build: %v\n", err)
		var be *environments.BuildError
		if errors.As(err, &be) && !f.verbose && len(rec.LogTail) > 0 {
			tail := rec.LogTail[max(0, len(rec.LogTail)-15):]
			fmt.Fprintf(stderr, "the end of the build log:\n  %s\n", strings.Join(tail, "\n  "))
		}
		if core.CodeOf(err) == core.ErrInvalid && be == nil {
			return 2
		}
		return 1
	}
	if f.asJSON {
		return printJSON(stdout, rec)
	}
	if !built {
		fmt.Fprintf(stdout, "%s: up to date (%s); nothing to build\n", rec.Name, rec.Image)
		return 0
	}
	fmt.Fprintf(stdout, "%s: built %s in %s, %s (+%s over %s)\n", rec.Name, rec.Image,
		(time.Duration(rec.BuildSeconds * float64(time.Second))).Round(100*time.Millisecond),
		units.HumanSize(float64(rec.SizeBytes)), units.HumanSize(float64(rec.AddedBytes)), rec.Base)
	if len(rec.Packages) > 0 {
		fmt.Fprintf(stdout, "packages: %s\n", strings.Join(rec.Packages, " "))
	}
	return 0
}

// envList is `airlock env list`.
func envList(ctx context.Context, m *builder.Manager, asJSON bool, stdout, stderr io.Writer) int {
	list, err := m.List(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock env list: %v\n", err)
		return 1
	}
	if asJSON {
		return printJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHASH\tSTATUS\tPACKAGES\tSIZE\tBUILD TIME")
	for _, r := range list {
		pk, bt, size := strings.Join(r.Packages, ","), "-", "-"
		if r.Builtin {
			pk = "(built-in)"
		}
		if len(pk) > 60 {
			pk = pk[:57] + "..."
		}
		if r.BuildSeconds > 0 {
			bt = (time.Duration(r.BuildSeconds * float64(time.Second))).Round(100 * time.Millisecond).String()
		}
		if r.SizeBytes > 0 {
			size = units.HumanSize(float64(r.SizeBytes))
		}
		hash := r.Hash
		if hash == "" {
			hash = "-"
		}
		status := string(r.Status)
		if r.Status == environments.StatusFailed && r.FailedStep != "" {
			status += " (" + r.FailedStep + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, hash, status, pk, size, bt)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "airlock env list: %v\n", err)
		return 1
	}
	return 0
}

// buildPrinter shows a build's events: a progress bar on a terminal, the
// steps as lines otherwise, and every log line with -v.
type buildPrinter struct {
	w       io.Writer
	verbose bool
	bar     *progressbar.ProgressBar
}

func newBuildPrinter(w io.Writer, verbose, bar bool) *buildPrinter {
	p := &buildPrinter{w: w, verbose: verbose}
	if bar {
		p.bar = progressbar.NewOptions(100, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("prepare"),
			progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	return p
}

// event shows one build event.
func (p *buildPrinter) event(ev environments.Event) {
	switch ev.Type {
	case environments.EventStep:
		if p.bar != nil {
			p.bar.Describe(ev.Step)
		} else {
			fmt.Fprintf(p.w, "step %s: %s\n", ev.Step, ev.Line)
		}
	case environments.EventLog:
		if p.verbose {
			if p.bar != nil {
				_ = p.bar.Clear()
			}
			fmt.Fprintf(p.w, "  %s\n", ev.Line)
		}
	case environments.EventProgress:
		if p.bar != nil {
			_ = p.bar.Set(int(ev.Progress * 100))
		}
	}
}

// done removes the bar.
func (p *buildPrinter) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
