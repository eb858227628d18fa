package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// DecideToolCall approves or rejects a tool call of this key held at
// pending_approval outside a run (POST /v1/tool-calls/approvals/{token};
// token is the result's approval_token). Approved, the call runs now and
// its answer is returned; rejected, the answer says it did not run. An
// unknown, used, expired or another key's token is an *APIError with
// core.ErrNotFound.
func (c *Client) DecideToolCall(ctx context.Context, token string, approve bool, reason string) (*wire.ToolCallResponse, error) {
	if token == "" {
		return nil, fmt.Errorf("airlock client: DecideToolCall: empty approval token")
	}
	r := &request{method: http.MethodPost, path: "/v1/tool-calls/approvals/" + seg(token)}
	if err := r.jsonBody(wire.ApprovalDecision{Approve: &approve, Reason: reason}); err != nil {
		return nil, err
	}
	var out wire.ToolCallResponse
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
