package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/kernels"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
)

// introspectRoutes adds the editor's questions to a session's kernel
// (issue 32): completion with signature help, and the variable panel's
// listing of the session's globals. Both are asked between calls (a
// running cell is waited for) and change nothing in the session.
func (s *Server) introspectRoutes(g *gin.RouterGroup, slow gin.HandlerFunc) {
	g.POST("/sessions/:id/complete", slow, limitBody(s.cfg.MaxBodyBytes), s.completeSession)
	g.GET("/sessions/:id/variables", slow, s.sessionVariables)
}

// introspect asks the kernel of session rec q about code and decodes the
// reply into out; a reply whose status is "error" (Jedi failed on the
// code) leaves out as it is.
func (s *Server) introspect(ctx context.Context, rec sessionrecords.Record, code string, q core.Introspect, out any) error {
	ops, ok := s.deps.Sessions.(kernels.Ops)
	if !ok {
		return newError(core.ErrUnavailable, "this server's sessions cannot answer kernel questions")
	}
	raw, err := ops.IntrospectSession(ctx, rec.Owner, rec.ID, code, q)
	if err != nil {
		return fmt.Errorf("introspect %s in session %s: %w", q.Kind, rec.ID, err)
	}
	var head struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("introspect %s in session %s: %w", q.Kind, rec.ID, core.E("api", core.ErrInternal, err))
	}
	if head.Status == "error" {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("introspect %s in session %s: %w", q.Kind, rec.ID, core.E("api", core.ErrInternal, err))
	}
	return nil
}

// completeSession answers POST /v1/sessions/{id}/complete: the kernel's
// completions at cursor_pos and, when the cursor is inside a call's
// parentheses, the callee's signature and docstring.
func (s *Server) completeSession(c *gin.Context) {
	rec, ok := s.ownedSession(c, true, true)
	if !ok {
		return
	}
	req, err := decodeComplete(c)
	if err != nil {
		fail(c, err)
		return
	}
	if n := utf8.RuneCountInString(req.Code); req.CursorPos < 0 || req.CursorPos > n {
		fail(c, newError(core.ErrInvalid, fmt.Sprintf("cursor_pos %d is outside the code (0 to %d code points)", req.CursorPos, n)))
		return
	}
	ctx := c.Request.Context()
	var comp struct {
		Matches     []string `json:"matches"`
		CursorStart int      `json:"cursor_start"`
		CursorEnd   int      `json:"cursor_end"`
	}
	comp.CursorStart, comp.CursorEnd = req.CursorPos, req.CursorPos
	err = s.introspect(ctx, rec, req.Code, core.Introspect{Kind: core.IntrospectComplete, CursorPos: req.CursorPos}, &comp)
	out := wire.Completion{Matches: comp.Matches, CursorStart: comp.CursorStart, CursorEnd: comp.CursorEnd, Signatures: []wire.Signature{}}
	if out.Matches == nil {
		out.Matches = []string{}
	}
	if err == nil && inCall(req.Code, req.CursorPos) {
		var insp struct {
			Found bool              `json:"found"`
			Data  map[string]string `json:"data"`
		}
		err = s.introspect(ctx, rec, req.Code, core.Introspect{Kind: core.IntrospectInspect, CursorPos: req.CursorPos}, &insp)
		if sig, ok := signatureOf(insp.Data["text/plain"]); insp.Found && ok {
			out.Signatures = append(out.Signatures, sig)
		}
	}
	s.reply(c, "complete", http.StatusOK, out, err)
}

// sessionVariables answers GET /v1/sessions/{id}/variables: the session's
// globals with type, shape and size; 409 conflict for a hibernated
// session, which this does not wake.
func (s *Server) sessionVariables(c *gin.Context) {
	// Not a use of the session: a panel refreshing does not keep it alive.
	rec, ok := s.ownedSession(c, false, true)
	if !ok {
		return
	}
	if s.sessions.Hibernated(c.Request.Context(), rec) {
		// Asking the kernel would wake it: a container start for a panel.
		fail(c, newError(core.ErrConflict, fmt.Sprintf("session %s is hibernated: its variables are in its snapshot and come back with its next call; listing them does not wake it", rec.ID)).
			withDetails(map[string]any{"state": wire.SessionHibernated}))
		return
	}
	out := wire.VariableList{Variables: []wire.Variable{}}
	err := s.introspect(c.Request.Context(), rec, "", core.Introspect{Kind: core.IntrospectVariables}, &out)
	if out.Variables == nil {
		out.Variables = []wire.Variable{}
	}
	s.reply(c, "list variables", http.StatusOK, out, err)
}

// inCall reports whether the cursor (in code points) is inside an open
// parenthesis of code, ignoring those in string literals and comments
// of the cursor's statement roughly as a reader would.
func inCall(code string, cursor int) bool {
	depth, quote, i := 0, rune(0), 0
	comment := false
	for _, r := range code {
		if i == cursor {
			break
		}
		i++
		switch {
		case comment:
			comment = r != '\n'
		case quote != 0:
			if r == quote || r == '\n' {
				quote = 0
			}
		case r == '#':
			comment = true
		case r == '\'' || r == '"':
			quote = r
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		}
	}
	return depth > 0
}

// signatureOf reads the "Signature:" line and the docstring out of the
// kernel's inspect text (airlock_introspect.inspect_at).
func signatureOf(text string) (wire.Signature, bool) {
	var sig wire.Signature
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "Signature:"):
			sig.Label = strings.TrimSpace(strings.TrimPrefix(l, "Signature:"))
		case l == "Docstring:":
			var doc []string
			for _, d := range lines[i+1:] {
				if strings.HasPrefix(d, "Source:") || strings.HasPrefix(d, "File:      ") {
					break
				}
				doc = append(doc, d)
			}
			sig.Doc = strings.TrimSpace(strings.Join(doc, "\n"))
		}
	}
	return sig, sig.Label != ""
}

// decodeComplete reads a CompleteRequest whose code and cursor_pos are both
// present (api/openapi.json requires them): a missing one is a 400 naming
// it, where it would otherwise complete an empty prefix at offset 0.
func decodeComplete(c *gin.Context) (wire.CompleteRequest, error) {
	var body struct {
		Code      *string `json:"code"`
		CursorPos *int    `json:"cursor_pos"`
	}
	if err := decodeJSON(c, &body, false); err != nil {
		return wire.CompleteRequest{}, err
	}
	switch {
	case body.Code == nil:
		return wire.CompleteRequest{}, newError(core.ErrInvalid, "code is required (the cell's text, possibly empty)")
	case body.CursorPos == nil:
		return wire.CompleteRequest{}, newError(core.ErrInvalid, "cursor_pos is required (the cursor's offset in code, in Unicode code points)")
	}
	return wire.CompleteRequest{Code: *body.Code, CursorPos: *body.CursorPos}, nil
}
