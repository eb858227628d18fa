package dispatcher

import (
	"context"
	"errors"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// ToolFetchURL is the host-side fetch tool (issue 29).
const ToolFetchURL = "fetch_url"

// maxURLChars bounds fetch_url's url argument.
const maxURLChars = 8192

// fetchURLTool declares fetch_url: it runs in Airlock, not in a sandbox,
// through cfg.Fetcher and the call's egress policy (Call.Egress); without
// a policy it is refused.
func fetchURLTool(cfg Config) Tool {
	return Tool{
		Name: ToolFetchURL,
		Description: "Fetch a web page or text document over HTTP(S) and get its readable text (HTML reduced to text). " +
			"Only the hosts your key's network policy allows can be reached; redirects are checked against it too. " +
			"Text-like content only (HTML, plain text, JSON, XML), size- and time-capped.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"url": map[string]any{"type": "string", "minLength": 1, "maxLength": maxURLChars, "pattern": "^[hH][tT][tT][pP][sS]?://",
					"description": "The absolute http:// or https:// URL to fetch."},
				"max_bytes": map[string]any{"type": "integer", "minimum": 1,
					"description": "Read at most this many bytes of the body (the server's cap if larger or absent)."},
			},
			"required":             []string{"url"},
			"additionalProperties": false,
		},
		Risk:    RiskLow,
		Prepare: fetchPrepare(cfg.Fetcher),
	}
}

// fetchPrepare returns fetch_url's Prepare: the fetch itself, answered in
// Airlock with the attempts in Action.Network.
func fetchPrepare(f *egress.Fetcher) PrepareFunc {
	return func(ctx context.Context, inv Invocation) (Action, error) {
		if inv.Call.Egress.Empty() {
			return Action{}, Refuse("no_network_policy", "fetch_url is not allowed: your key has no network policy (egress), so no host can be fetched. Ask the operator to add egress=HOST to your key.")
		}
		res, err := f.Fetch(ctx, inv.Call.Owner, inv.Call.ID, inv.Call.Egress,
			egress.FetchRequest{URL: inv.Args.String("url"), MaxBytes: inv.Args.Int("max_bytes")})
		if err != nil {
			if errors.Is(err, core.ErrInvalid) {
				return Action{}, Refuse("invalid_arguments", err.Error())
			}
			return Action{}, err
		}
		net := make([]core.NetworkAttempt, 0, len(res.Network))
		for _, a := range res.Network {
			net = append(net, core.NetworkAttempt{Host: a.Host, Port: a.Port, Allowed: a.Allowed, Reason: a.Reason, Bytes: a.Bytes})
		}
		return Action{Content: res.Render(), Network: net, Status: mapSandboxStatus(res.Status)}, nil
	}
}
