package mcpserver

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
)

// errClosing refuses new sessions while the Server closes.
var errClosing = errors.New("mcpserver: server is closing")

// session is the Airlock side of one MCP session: the sandbox session,
// opened on the first tool call.
type session struct {
	owner string
	mu    sync.Mutex      // held while opening
	id    string          // the Airlock session id, "" until opened
	held  map[string]bool // approval tokens handed to this MCP session
	// env is the MCP session's environment (sessionEnvironment), fixed
	// at its first tool call (envSet).
	env    string
	envSet bool
	// left are the sessions this MCP session opened and moved off (the
	// origin of a fork_session): closed with it, as id is.
	left []string
}

// maxHeld bounds the approval tokens one MCP session may hold.
const maxHeld = 64

// hold remembers an approval token given to this MCP session.
func (st *session) hold(token string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held == nil {
		st.held = map[string]bool{}
	}
	if len(st.held) >= maxHeld {
		for k := range st.held {
			delete(st.held, k)
			break
		}
	}
	st.held[token] = true
}

// take forgets token and reports whether this MCP session held it.
func (st *session) take(token string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	ok := st.held[token]
	delete(st.held, token)
	return ok
}

// session returns the state of ss, registering it (and a watcher that
// closes its Airlock session when ss ends) on first use.
func (s *Server) session(ss *mcp.ServerSession, owner string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.sessions[ss]; ok {
		return st, nil
	}
	if s.closed {
		return nil, errClosing
	}
	st := &session{owner: owner}
	s.sessions[ss] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
		s.closeSandbox(st)
	}()
	return st, nil
}

// lookup returns the state of ss without creating it.
func (s *Server) lookup(ss *mcp.ServerSession) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.sessions[ss]
	return st, ok
}

// ensure returns st's Airlock session id, opening the session when it has
// none yet; "" when the backend has no sessions.
func (s *Server) ensure(ctx context.Context, st *session) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.id != "" {
		return st.id, nil
	}
	var id string
	var err error
	if eo, ok := s.be.(EnvSessionOpener); ok && st.env != "" {
		id, err = eo.OpenSessionIn(ctx, st.owner, st.env, s.may(st.owner), s.cfg.Limits, s.cfg.Mount)
	} else {
		id, err = s.be.OpenSession(ctx, st.owner, s.cfg.Limits, s.cfg.Mount)
	}
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", nil // no sessions: calls run one-shot
	}
	st.id = id
	s.log.Info("mcp: session opened", "owner", st.owner, "session", st.id)
	return st.id, nil
}

// current returns st's Airlock session id, or "".
func (st *session) current() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.id
}

// forget drops id (gone on the sandbox side) so the next call opens a new one.
func (st *session) forget(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.id == id {
		st.id = ""
	}
}

// closeSandbox closes st's Airlock session, if any, and those it moved off.
func (s *Server) closeSandbox(st *session) {
	st.mu.Lock()
	id, left := st.id, st.left
	st.id, st.left = "", nil
	st.mu.Unlock()
	for _, old := range left {
		s.closeOne(st.owner, old)
	}
	if id != "" {
		s.closeOne(st.owner, id)
	}
}

// closeOne closes owner's Airlock session id (one already gone is fine).
func (s *Server) closeOne(owner, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CloseTimeout)
	defer cancel()
	if err := s.be.CloseSession(ctx, owner, id); err != nil && !errors.Is(err, core.ErrNotFound) {
		s.log.Warn("mcp: close session", "owner", owner, "session", id, "err", err)
		return
	}
	s.log.Info("mcp: session closed", "owner", owner, "session", id)
}
