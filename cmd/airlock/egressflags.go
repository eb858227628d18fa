package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/docker/go-units"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
)

// egressFlags configure the network leash (issue 29): the worker's egress
// proxy, reached by sandboxes through their doors, and the fetcher behind
// fetch_url. Which hosts a call may reach comes from its key (egress= in
// the keys file), or from --egress for a local command.
type egressFlags struct {
	doorDir    string
	allowCIDRs string
	resolve    string
	maxConns   int
	maxBytes   string
	maxTime    time.Duration
	pipIndex   string
	fetchBytes string
	local      string // --egress: the policy of a local command's calls
	pipNames   string // --egress-pip-packages: the package names calls may download
}

// register adds the egress flags to fs.
func (f *egressFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.doorDir, "egress-door-dir", os.Getenv("AIRLOCK_EGRESS_DOOR_DIR"), "host folder for the egress proxy's per-sandbox unix sockets (doors); setting it runs the proxy, so calls of keys with egress= get network through it (a path the Docker daemon sees; env AIRLOCK_EGRESS_DOOR_DIR)")
	fs.StringVar(&f.allowCIDRs, "egress-allow-cidrs", os.Getenv("AIRLOCK_EGRESS_ALLOW_CIDRS"), "private ranges the egress proxy and fetch_url may connect to, e.g. the subnet of an internal package mirror (10.0.5.0/24,...; loopback, link-local and metadata never; env AIRLOCK_EGRESS_ALLOW_CIDRS)")
	fs.StringVar(&f.resolve, "egress-resolve", os.Getenv("AIRLOCK_EGRESS_RESOLVE"), "fixed addresses for names the host's resolver does not know (pypi.internal=10.0.5.7,...; still checked like any address; env AIRLOCK_EGRESS_RESOLVE)")
	fs.IntVar(&f.maxConns, "egress-max-connections", envInt("AIRLOCK_EGRESS_MAX_CONNECTIONS", 0), "connections one call may open through the egress proxy (0: 256; env AIRLOCK_EGRESS_MAX_CONNECTIONS)")
	fs.StringVar(&f.maxBytes, "egress-max-bytes", os.Getenv("AIRLOCK_EGRESS_MAX_BYTES"), "bytes one call may move through the egress proxy, both ways, e.g. 500m (default 1g; env AIRLOCK_EGRESS_MAX_BYTES)")
	fs.DurationVar(&f.maxTime, "egress-max-time", envDuration("AIRLOCK_EGRESS_MAX_TIME", 0), "how long one call may use the network (0: its own timeout bounds it; env AIRLOCK_EGRESS_MAX_TIME)")
	fs.StringVar(&f.pipIndex, "egress-pip-index", os.Getenv("AIRLOCK_EGRESS_PIP_INDEX"), "pip's index URL in sandboxes with network, e.g. https://pypi.internal/simple (env AIRLOCK_EGRESS_PIP_INDEX)")
	fs.StringVar(&f.fetchBytes, "fetch-max-bytes", os.Getenv("AIRLOCK_FETCH_MAX_BYTES"), "most of a body fetch_url reads, e.g. 2m (default 1m; env AIRLOCK_FETCH_MAX_BYTES)")
	fs.StringVar(&f.pipNames, "egress-pip-packages", os.Getenv("AIRLOCK_EGRESS_PIP_PACKAGES"), "the only Python packages sandboxes may download through the egress proxy (NAME,...; PEP 503 names); checked on a plain-http --egress-pip-index, whose https tunnels are then refused (env AIRLOCK_EGRESS_PIP_PACKAGES)")
	fs.StringVar(&f.local, "egress", os.Getenv("AIRLOCK_EGRESS"), "for a local command (exec, session, mcp, run, serve --insecure-local): the hosts its calls may reach, as a key's egress= (env AIRLOCK_EGRESS)")
}

// netPath returns the Guard and Resolver the flags describe.
func (f *egressFlags) netPath() (*egress.Guard, egress.Resolver, error) {
	cidrs, err := egress.ParseCIDRs(f.allowCIDRs)
	if err != nil {
		return nil, nil, fmt.Errorf("--egress-allow-cidrs: %w", err)
	}
	g, err := egress.NewGuard(cidrs)
	if err != nil {
		return nil, nil, fmt.Errorf("--egress-allow-cidrs: %w", err)
	}
	var r egress.Resolver = net.DefaultResolver
	if f.resolve != "" {
		hosts, err := egress.ParseResolve(f.resolve)
		if err != nil {
			return nil, nil, fmt.Errorf("--egress-resolve: %w", err)
		}
		r = &egress.StaticResolver{Hosts: hosts, Next: net.DefaultResolver}
	}
	return g, r, nil
}

// sandbox returns the engine's egress configuration: with --egress-door-dir
// a proxy (doors only, no listening address), its metrics on reg.
func (f *egressFlags) sandbox(log *slog.Logger, reg prometheus.Registerer) (sandbox.EgressConfig, error) {
	var out sandbox.EgressConfig
	if f.doorDir == "" {
		return out, nil
	}
	if err := os.MkdirAll(f.doorDir, 0o700); err != nil {
		return out, fmt.Errorf("--egress-door-dir: %w", err)
	}
	g, r, err := f.netPath()
	if err != nil {
		return out, err
	}
	caps := egress.Caps{Connections: f.maxConns, Time: f.maxTime}
	if f.maxBytes != "" {
		if caps.Bytes, err = units.RAMInBytes(f.maxBytes); err != nil {
			return out, fmt.Errorf("--egress-max-bytes %q: %w", f.maxBytes, err)
		}
	}
	cfg := egress.DefaultConfig()
	cfg.Guard, cfg.Resolver, cfg.Registerer = g, r, reg
	cfg.Caps = caps // zero fields: the proxy's defaults
	cfg.Index = egress.PackageIndex{URL: f.pipIndex}
	if f.pipNames != "" {
		if cfg.Index.Names, err = egress.ParsePackages(f.pipNames); err != nil {
			return out, fmt.Errorf("--egress-pip-packages: %w", err)
		}
	}
	cfg.Log = log
	cfg.Audit = func(ev egress.Event) {
		log.Info("egress", "owner", ev.Owner, "call_id", ev.CallID, "door", ev.Door, "kind", ev.Kind, "method", ev.Method,
			"host", ev.Host, "port", ev.Port, "allowed", ev.Allowed, "reason", ev.Reason, "bytes", ev.Bytes, "addr", ev.Addr.String())
	}
	p, err := egress.New(cfg)
	if err != nil {
		return out, fmt.Errorf("egress proxy: %w", err)
	}
	return sandbox.EgressConfig{Proxy: p, DoorDir: f.doorDir, PipIndex: f.pipIndex}, nil
}

// fetcher returns fetch_url's Fetcher, its metrics on reg.
func (f *egressFlags) fetcher(log *slog.Logger, reg prometheus.Registerer) (*egress.Fetcher, error) {
	g, r, err := f.netPath()
	if err != nil {
		return nil, err
	}
	cfg := egress.DefaultFetchConfig()
	cfg.Guard, cfg.Resolver, cfg.Registerer = g, r, reg
	if f.fetchBytes != "" {
		if cfg.MaxBytes, err = units.RAMInBytes(f.fetchBytes); err != nil {
			return nil, fmt.Errorf("--fetch-max-bytes %q: %w", f.fetchBytes, err)
		}
	}
	cfg.Audit = func(ev egress.Event) {
		log.Info("egress", "owner", ev.Owner, "call_id", ev.CallID, "kind", ev.Kind, "method", ev.Method,
			"host", ev.Host, "port", ev.Port, "allowed", ev.Allowed, "reason", ev.Reason, "bytes", ev.Bytes, "addr", ev.Addr.String())
	}
	return egress.NewFetcher(cfg)
}

// sessionEgress returns the network policy of an owner's sessions: the
// key's egress (ks set) or the local --egress, narrowed by the egress list of the session's environment; "" for none.
func sessionEgress(ks *keys.Set, local string) func(owner string, envEgress []string) string {
	return func(owner string, envEgress []string) string {
		if ks == nil {
			p, err := egress.ParseHosts(local)
			if err == nil {
				p, err = egress.Narrow(p, envEgress)
			}
			if err != nil || p.Empty() {
				return ""
			}
			return p.String()
		}
		p, err := keys.EgressFor(ks.Policy(owner), envEgress)
		if err != nil || p.Empty() {
			return ""
		}
		return p.String()
	}
}

// localPolicy is --egress as a policy (zero when unset).
func (f *egressFlags) localPolicy() (egress.Policy, error) {
	p, err := egress.ParseHosts(f.local)
	if err != nil {
		return egress.Policy{}, fmt.Errorf("--egress: %w", err)
	}
	return p, nil
}
