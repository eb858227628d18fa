package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/airlock-dev/airlock/core"
)

// audit writes the one structured record every call leaves: who, which
// tool, a digest of the arguments (never their values), the decision, the
// status and the duration. Identifiers from the model are capped and
// redacted.
func (d *Dispatcher) audit(ctx context.Context, call Call, res Result, decision string) {
	red := d.redactors.forOwner(call.Owner)
	sum := sha256.Sum256(call.Arguments)
	attrs := []slog.Attr{
		slog.String("caller", capString(call.Caller, 64)),
		slog.String("owner", capString(call.Owner, 128)),
		slog.String("tool", red.String(capString(call.Name, 64))),
		slog.String("call_id", red.String(capString(call.ID, 128))),
		slog.String("session_id", capString(call.SessionID, 128)),
		slog.String("args_sha256", hex.EncodeToString(sum[:])),
		slog.Int("args_bytes", len(call.Arguments)),
		slog.String("decision", decision),
		slog.String("status", string(res.Status)),
		slog.Int64("duration_ms", res.DurationMS),
	}
	if res.Reason != "" {
		attrs = append(attrs, slog.String("reason", res.Reason))
	}
	if res.Sandbox != nil {
		attrs = append(attrs, slog.Int("exit_code", res.Sandbox.ExitCode), slog.Int64("sandbox_ms", res.Sandbox.DurationMS))
	}
	if len(res.Network) > 0 {
		attrs = append(attrs, networkAttr(res.Network))
	}
	if res.ApprovalToken != "" {
		// A digest, so that the log cannot be used to approve a call.
		t := sha256.Sum256([]byte(res.ApprovalToken))
		attrs = append(attrs, slog.String("approval_token_sha256", hex.EncodeToString(t[:8])))
	}
	level := slog.LevelInfo
	if res.Err != nil {
		attrs = append(attrs, slog.String("error", red.String(capString(res.Err.Error(), 512))))
		if res.Status == StatusInternal {
			level = slog.LevelError
		} else {
			level = slog.LevelWarn
		}
	}
	d.log.LogAttrs(ctx, level, "tool_call", attrs...)
}

// maxAuditedAttempts bounds the connection attempts one audit record lists.
const maxAuditedAttempts = 50

// networkAttr lists a call's connection attempts (already redacted) for
// its audit record: "host:port allowed|refused(reason) bytes", at most
// maxAuditedAttempts of them, with counts.
func networkAttr(attempts []core.NetworkAttempt) slog.Attr {
	refused := 0
	list := make([]string, 0, min(len(attempts), maxAuditedAttempts))
	for i, a := range attempts {
		if !a.Allowed {
			refused++
		}
		if i >= maxAuditedAttempts {
			continue
		}
		verdict := "allowed"
		if !a.Allowed {
			verdict = "refused"
		}
		if a.Reason != "" {
			verdict += "(" + a.Reason + ")"
		}
		list = append(list, fmt.Sprintf("%s:%d %s %d", capString(a.Host, 255), a.Port, verdict, a.Bytes))
	}
	return slog.Group("network", slog.Int("attempts", len(attempts)), slog.Int("refused", refused), slog.Any("list", list))
}
