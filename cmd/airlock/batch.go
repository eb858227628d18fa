package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/wire"
)

const batchUsage = `usage:
  airlock batch submit [flags] FILE.jsonl
  airlock batch submit [flags] --each 'repos/*' --input NAME[=DIR] TOOL CODE
  airlock batch run [flags] [--out results.jsonl] [--id ID] (FILE.jsonl | --each GLOB --input NAME TOOL CODE)
  airlock batch status|results|cancel|retry [flags] ID
  airlock batch list [flags]
flags: --server URL (env AIRLOCK_SERVER), --key KEY (env AIRLOCK_API_KEY), --concurrency N, --completion-window 24h
`

// batchFlags are the flags every batch subcommand takes, and its
// positional arguments.
type batchFlags struct {
	server, key, each, input, window, out, id string
	environment                               string
	concurrency                               int
	errorsOnly, asJSON                        bool
	pos                                       []string
}

// parseBatchFlags parses the flags of `airlock batch SUB`; ok false means
// exit 2 (the flag package printed why).
func parseBatchFlags(sub string, args []string, stderr io.Writer) (f batchFlags, ok bool) {
	fs := flag.NewFlagSet("airlock batch "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	registerServer(fs, &f.server, &f.key, "http://127.0.0.1:8080", "that runs the batch")
	registerEnvironment(fs, &f.environment)
	fs.StringVar(&f.each, "each", "", "map batch: a glob of folders under the input folder, one item each")
	fs.StringVar(&f.input, "input", "", "map batch: NAME (or NAME=DIR) of the server's input folder the glob runs in")
	fs.StringVar(&f.window, "completion-window", "", "how long the batch may take (e.g. 24h)")
	fs.IntVar(&f.concurrency, "concurrency", 0, "items of the batch run at once (server default when 0)")
	fs.StringVar(&f.out, "out", "results.jsonl", "batch run: where the results go")
	fs.StringVar(&f.id, "id", "", "batch run: resume this batch instead of submitting")
	fs.BoolVar(&f.errorsOnly, "errors", false, "batch results: only the failed items")
	fs.BoolVar(&f.asJSON, "json", false, "print the batch as JSON")
	if err := fs.Parse(args); err != nil {
		return f, false
	}
	f.pos = fs.Args()
	return f, true
}

// runBatch is `airlock batch SUBCOMMAND ...`.
func runBatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, batchUsage)
		return 2
	}
	sub := args[0]
	f, ok := parseBatchFlags(sub, args[1:], stderr)
	if !ok {
		return 2
	}
	c, err := client.New(f.server, client.WithAPIKey(f.key), client.WithUserAgent("airlock-batch/1"))
	if err != nil {
		return command{"batch", stderr}.failf(2, "--server: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := command{"batch " + sub, stderr}
	switch sub {
	case "submit":
		b, err := submitBatch(ctx, c, f, f.pos)
		if err != nil {
			return cmd.failAPI(err)
		}
		if f.asJSON {
			return printJSON(stdout, b)
		}
		fmt.Fprintln(stdout, b.ID)
		return 0
	case "status", "results", "cancel", "retry":
		if len(f.pos) != 1 {
			fmt.Fprintf(stderr, "airlock batch %s: want exactly one batch ID\n%s", sub, batchUsage)
			return 2
		}
		return batchByID(ctx, c, cmd, sub, f, stdout)
	case "list":
		return listBatches(ctx, c, cmd, stdout)
	case "run":
		return runBatchLive(ctx, c, f, f.pos, stdout, stderr)
	}
	fmt.Fprintf(stderr, "airlock batch: unknown subcommand %q\n%s", sub, batchUsage)
	return 2
}

// batchByID runs `airlock batch status|results|cancel|retry ID`.
func batchByID(ctx context.Context, c *client.Client, cmd command, sub string, f batchFlags, stdout io.Writer) int {
	id := f.pos[0]
	var b *wire.Batch
	var err error
	switch sub {
	case "results":
		if err := c.BatchResults(ctx, id, f.errorsOnly, stdout); err != nil {
			return cmd.failAPI(err)
		}
		return 0
	case "status":
		b, err = c.GetBatch(ctx, id)
	case "cancel":
		b, err = c.CancelBatch(ctx, id)
	default:
		b, err = c.RetryBatch(ctx, id)
	}
	if err != nil {
		return cmd.failAPI(err)
	}
	if f.asJSON {
		return printJSON(stdout, b)
	}
	if sub == "status" {
		fmt.Fprintf(stdout, "%s %s total=%d completed=%d failed=%d\n", b.ID, b.Status, b.RequestCounts.Total, b.RequestCounts.Completed, b.RequestCounts.Failed)
	} else {
		fmt.Fprintf(stdout, "%s %s\n", b.ID, b.Status)
	}
	return 0
}

// listBatches runs `airlock batch list`.
func listBatches(ctx context.Context, c *client.Client, cmd command, stdout io.Writer) int {
	bs, err := c.ListBatches(ctx)
	if err != nil {
		return cmd.failAPI(err)
	}
	for _, b := range bs {
		fmt.Fprintf(stdout, "%s %s %d/%d failed=%d\n", b.ID, b.Status, b.RequestCounts.Completed+b.RequestCounts.Failed, b.RequestCounts.Total, b.RequestCounts.Failed)
	}
	return 0
}

// printJSON prints v as indented JSON and returns the exit code.
func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

// submitBatch submits FILE.jsonl, or a map spec from --each/--input TOOL CODE.
func submitBatch(ctx context.Context, c *client.Client, f batchFlags, pos []string) (*wire.Batch, error) {
	if f.each != "" || f.input != "" {
		if f.each == "" || f.input == "" || len(pos) != 2 {
			return nil, errors.New("a map batch needs --each GLOB --input NAME TOOL CODE")
		}
		name, _, _ := strings.Cut(f.input, "=")
		tool, code := pos[0], pos[1]
		args := map[string]any{"code": code}
		if tool == "execute_shell" {
			args = map[string]any{"command": code}
		}
		tc, err := client.ToolCall{Name: tool, Arguments: args, Environment: f.environment}.Request()
		if err != nil {
			return nil, err
		}
		return c.CreateMapBatch(ctx, wire.BatchMapSpec{ToolCall: &tc,
			Each: f.each, Input: name, Concurrency: f.concurrency, CompletionWindow: f.window})
	}
	if len(pos) != 1 {
		return nil, errors.New("want FILE.jsonl (or --each GLOB --input NAME TOOL CODE)")
	}
	var data []byte
	var err error
	if pos[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return nil, err
	}
	if f.environment != "" {
		if data, err = withEnvironment(data, f.environment); err != nil {
			return nil, err
		}
	}
	return c.CreateBatch(ctx, data, client.BatchOptions{Concurrency: f.concurrency, CompletionWindow: f.window, Environment: f.environment})
}

// runBatchLive submits (or, with --id, resumes following) a batch, shows
// a progress bar until it ends and writes its results to --out.
func runBatchLive(ctx context.Context, c *client.Client, f batchFlags, pos []string, stdout, stderr io.Writer) int {
	var b *wire.Batch
	var err error
	if f.id != "" {
		b, err = c.GetBatch(ctx, f.id)
	} else {
		b, err = submitBatch(ctx, c, f, pos)
	}
	cmd := command{"batch run", stderr}
	if err != nil {
		return cmd.failAPI(err)
	}
	fmt.Fprintf(stderr, "batch %s (%d items); resume with: airlock batch run --id %s\n", b.ID, b.RequestCounts.Total, b.ID)
	bar := progressbar.NewOptions(b.RequestCounts.Total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("running"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("items"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	for !b.Status.Terminal() {
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "\ninterrupted; the batch goes on: airlock batch run --id %s\n", b.ID)
			return 130
		case <-time.After(500 * time.Millisecond):
		}
		nb, err := c.GetBatch(ctx, b.ID)
		if err != nil {
			continue // the server may be restarting; keep following
		}
		b = nb
		done := b.RequestCounts.Completed + b.RequestCounts.Failed
		bar.Describe(fmt.Sprintf("%s done=%d failed=%d", b.Status, b.RequestCounts.Completed, b.RequestCounts.Failed))
		_ = bar.Set(done)
	}
	_ = bar.Finish()
	out, err := os.Create(f.out)
	if err != nil {
		return cmd.fail(1, err)
	}
	if err := c.BatchResults(ctx, b.ID, false, out); err != nil {
		_ = out.Close()
		return cmd.failAPI(err)
	}
	if err := out.Close(); err != nil {
		return cmd.fail(1, err)
	}
	fmt.Fprintf(stdout, "%s %s total=%d completed=%d failed=%d results=%s\n", b.ID, b.Status, b.RequestCounts.Total, b.RequestCounts.Completed, b.RequestCounts.Failed, f.out)
	if b.Status != "completed" || b.RequestCounts.Failed > 0 {
		return 1
	}
	return 0
}

// withEnvironment sets env as the environment of every JSONL item's tool
// call that names none (--environment of `airlock batch`).
func withEnvironment(data []byte, env string) ([]byte, error) {
	var out bytes.Buffer
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var item map[string]json.RawMessage
		if err := json.Unmarshal(line, &item); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if raw, ok := item["tool_call"]; ok {
			var tc map[string]json.RawMessage
			if err := json.Unmarshal(raw, &tc); err != nil {
				return nil, fmt.Errorf("line %d: tool_call: %w", i+1, err)
			}
			if _, named := tc["environment"]; !named {
				tc["environment"], _ = json.Marshal(env)
				item["tool_call"], _ = json.Marshal(tc)
			}
		}
		b, err := json.Marshal(item)
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}
