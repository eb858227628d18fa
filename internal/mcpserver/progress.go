package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress sends a progress notification every ProgressInterval while a
// call runs, when the client asked for progress. The returned stop ends
// them and waits for the sender.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.ProgressInterval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			el := time.Since(start).Round(100 * time.Millisecond)
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(n), Message: fmt.Sprintf("%s running for %s", req.Params.Name, el)})
			if err != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}
