package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
)

// apiFlags are the HTTP API flags of `airlock serve` (a proposal; the
// --redis flag and the wiring of the dispatcher, sessions and runs belong to
// serve itself).
type apiFlags struct {
	addr            string
	insecureLocal   bool
	keysFile        string
	cors            apiListFlag
	inputs          apiListFlag
	rate            float64
	burst           int
	maxConcurrent   int
	maxBody         string
	maxUpload       string
	toolTimeout     time.Duration
	shutdownTimeout time.Duration
	metricsAddr     string
	metricsKey      string
	approvalTools   string
	requireApproval string
	kernelCullIdle  time.Duration
	sessionCallTO   time.Duration
	// rateSet is whether --rate was given: without it, --insecure-local
	// (one user on loopback) has no rate limit (localRate).
	rateSet bool
}

// apiListFlag is a repeatable string flag.
type apiListFlag []string

// String implements flag.Value.
func (l *apiListFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *apiListFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// register adds the API flags to fs.
func (f *apiFlags) register(fs *flag.FlagSet) {
	d := api.DefaultConfig()
	fs.StringVar(&f.addr, "addr", envOr("AIRLOCK_ADDR", d.Addr), "listen address HOST:PORT (env AIRLOCK_ADDR)")
	fs.BoolVar(&f.insecureLocal, "insecure-local", false, "serve without API keys; refused on a non-loopback address")
	fs.StringVar(&f.keysFile, "keys-file", os.Getenv("AIRLOCK_KEYS_FILE"), "file of API keys, one KEY or NAME:KEY per line (env AIRLOCK_KEYS_FILE; keys also from "+keys.Env+")")
	fs.Var(&f.cors, "cors-origin", "browser origin allowed to call the API (repeatable; env AIRLOCK_CORS_ORIGINS, comma separated)")
	fs.Var(&f.inputs, "input", "NAME=DIR: a host folder runs and tool calls may mount read-only by NAME (repeatable)")
	fs.Float64Var(&f.rate, "rate", d.RatePerSecond, "requests per second per API key (negative: unlimited; with --insecure-local unlimited unless given)")
	fs.IntVar(&f.burst, "burst", d.RateBurst, "burst of the per-key rate limit")
	fs.IntVar(&f.maxConcurrent, "max-concurrent", d.MaxConcurrentPerKey, "simultaneous requests per API key")
	fs.StringVar(&f.maxBody, "max-body", "1m", "largest JSON request body")
	fs.StringVar(&f.maxUpload, "max-upload", "32m", "largest file upload")
	fs.DurationVar(&f.toolTimeout, "tool-timeout", d.ToolCallTimeout, "deadline of a tool call or file transfer request (default: the longest call, timeout_seconds 300 moved for CPU wait to three times that, plus two minutes)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long shutdown waits for in-flight requests")
	fs.StringVar(&f.metricsAddr, "metrics-addr", os.Getenv("AIRLOCK_METRICS_ADDR"), "serve /metrics on this separate HOST:PORT only, not on --addr (env AIRLOCK_METRICS_ADDR)")
	fs.StringVar(&f.metricsKey, "metrics-key", "", "Bearer token /metrics requires (default $AIRLOCK_METRICS_KEY; none: open)")
	fs.StringVar(&f.approvalTools, "approval-tools", os.Getenv("AIRLOCK_APPROVAL_TOOLS"), "comma-separated tools whose every call waits for approval (env AIRLOCK_APPROVAL_TOOLS)")
	fs.DurationVar(&f.kernelCullIdle, "kernel-cull-idle", envDuration("AIRLOCK_KERNEL_CULL_IDLE", 0), "end Jupyter gateway kernels (/api/kernels) that ran nothing for this long, like Enterprise Gateway's culling; 0: only the session idle limit (env AIRLOCK_KERNEL_CULL_IDLE)")
	fs.DurationVar(&f.sessionCallTO, "session-call-timeout", envDuration("AIRLOCK_SESSION_CALL_TIMEOUT", d.SessionCallTimeout), "per-call limit of a session opened without one (a notebook cell), and the most a session may ask for when its key's ceiling is lower; at most the sandbox maximum (env AIRLOCK_SESSION_CALL_TIMEOUT)")
	fs.StringVar(&f.requireApproval, "require-approval", os.Getenv("AIRLOCK_REQUIRE_APPROVAL"), "comma-separated policy rules that hold a call for approval instead of refusing it, e.g. shell.rm_root (env AIRLOCK_REQUIRE_APPROVAL; `airlock tools list` shows the rules)")
}

// approvals parses and checks --approval-tools and --require-approval:
// an unknown tool or rule name is an error naming it.
func (f *apiFlags) approvals() (tools, rules []string, err error) {
	tools, rules = dispatcher.SplitNames(f.approvalTools), dispatcher.SplitNames(f.requireApproval)
	if err := dispatcher.CheckApprovalNames(tools, nil); err != nil {
		return nil, nil, fmt.Errorf("--approval-tools: %w", err)
	}
	if err := dispatcher.CheckApprovalNames(nil, rules); err != nil {
		return nil, nil, fmt.Errorf("--require-approval: %w", err)
	}
	return tools, rules, nil
}

// config loads the keys, checks address and mode together and returns the
// API configuration.
func (f *apiFlags) config() (api.Config, error) {
	ks, err := keys.Load(f.keysFile, os.Getenv(keys.Env))
	if err != nil {
		return api.Config{}, err
	}
	if f.insecureLocal && ks.Len() > 0 {
		return api.Config{}, fmt.Errorf("--insecure-local ignores API keys: unset %s and --keys-file, or drop --insecure-local", keys.Env)
	}
	if err := api.ValidateListen(f.addr, f.insecureLocal, ks); err != nil {
		return api.Config{}, err
	}
	maxBody, err := units.RAMInBytes(f.maxBody)
	if err != nil {
		return api.Config{}, fmt.Errorf("--max-body: %w", err)
	}
	maxUpload, err := units.RAMInBytes(f.maxUpload)
	if err != nil {
		return api.Config{}, fmt.Errorf("--max-upload: %w", err)
	}
	inputs, err := apiInputs(f.inputs)
	if err != nil {
		return api.Config{}, err
	}
	cors := append([]string(nil), f.cors...)
	for _, o := range strings.Split(os.Getenv("AIRLOCK_CORS_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o != "" {
			cors = append(cors, o)
		}
	}
	cfg := api.DefaultConfig()
	cfg.Addr, cfg.InsecureLocal, cfg.CORSOrigins, cfg.InputFolders = f.addr, f.insecureLocal, cors, inputs
	if !f.insecureLocal {
		cfg.Keys = ks
	}
	cfg.RatePerSecond, cfg.RateBurst, cfg.MaxConcurrentPerKey = f.rate, f.burst, f.maxConcurrent
	if f.insecureLocal && !f.rateSet {
		cfg.RatePerSecond = localRate
	}
	cfg.MaxBodyBytes, cfg.MaxUploadBytes = maxBody, maxUpload
	cfg.ToolCallTimeout, cfg.ShutdownTimeout = f.toolTimeout, f.shutdownTimeout
	if f.kernelCullIdle < 0 {
		return api.Config{}, fmt.Errorf("--kernel-cull-idle %s is negative", f.kernelCullIdle)
	}
	cfg.KernelCullIdle = f.kernelCullIdle
	if f.sessionCallTO < 0 {
		return api.Config{}, fmt.Errorf("--session-call-timeout %s is negative", f.sessionCallTO)
	}
	cfg.SessionCallTimeout = f.sessionCallTO
	cfg.MetricsAddr, cfg.MetricsKey = f.metricsAddr, f.metricsKey
	sb := sandbox.DefaultConfig()
	cfg.DefaultLimits, cfg.MaxLimits = sb.Defaults, sb.Max
	if cfg.MetricsKey == "" {
		cfg.MetricsKey = os.Getenv("AIRLOCK_METRICS_KEY")
	}
	if cfg.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.MetricsAddr); err != nil {
			return api.Config{}, fmt.Errorf("--metrics-addr %q: %w", cfg.MetricsAddr, err)
		}
	}
	return cfg, nil
}

// localRate is the rate limit of --insecure-local without --rate: none.
// Its one user on loopback is the operator; a per-key limit meant for
// shared keys would only cap their own tools (20 requests/s held four
// clients of one owner to 15-16 calls/s and back-to-back calls to 50 ms
// each, issue 33). --rate still sets one.
const localRate = -1

// apiInputs parses NAME=DIR entries; each DIR must be an existing folder.
func apiInputs(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		name, dir, ok := strings.Cut(e, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("--input %q: want NAME=DIR", e)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", name, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--input %s: %s is not a folder", name, abs)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--input %s given twice", name)
		}
		out[name] = abs
	}
	return out, nil
}
