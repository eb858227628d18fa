package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// routes is the gateway's REST API, as Kernel Gateway serves it and
// jupyter_server's GatewayClient calls it.
func (g *Gateway) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /api", g.apiInfo)
	m.HandleFunc("GET /api/kernelspecs", g.listSpecs)
	m.HandleFunc("GET /api/kernelspecs/{name}", g.getSpec)
	m.HandleFunc("GET /kernelspecs/{name}/{path...}", g.specResource)
	m.HandleFunc("GET /api/kernels", g.listKernels)
	m.HandleFunc("POST /api/kernels", g.startKernel)
	m.HandleFunc("GET /api/kernels/{id}", g.getKernel)
	m.HandleFunc("DELETE /api/kernels/{id}", g.deleteKernel)
	m.HandleFunc("POST /api/kernels/{id}/interrupt", g.interruptKernel)
	m.HandleFunc("POST /api/kernels/{id}/restart", g.restartKernel)
	m.HandleFunc("GET /api/kernels/{id}/channels", g.channels)
	return m
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiInfo answers GET /api.
func (g *Gateway) apiInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, wire.JupyterAPI{Version: "airlock", ProtocolVersion: ProtocolVersion})
}

// specJSON is one kernelspec as Jupyter lists it.
func specJSON(s Spec) wire.KernelSpec {
	return wire.KernelSpec{
		Name: s.Name,
		Spec: wire.KernelSpecFile{
			Argv: []string{}, DisplayName: s.DisplayName, Language: s.Language,
			InterruptMode: "message", Env: map[string]string{}, Metadata: map[string]any{"airlock": map[string]any{"environment": s.environment()}},
		},
		Resources: map[string]string{},
	}
}

// listSpecs answers GET /api/kernelspecs: one spec per environment the key
// may use.
func (g *Gateway) listSpecs(w http.ResponseWriter, r *http.Request) {
	specs := g.backend.Specs(ownerOf(r))
	out := map[string]wire.KernelSpec{}
	def := ""
	for i, s := range specs {
		if i == 0 {
			def = s.Name
		}
		out[s.Name] = specJSON(s)
	}
	writeJSON(w, http.StatusOK, wire.KernelSpecs{Default: def, Kernelspecs: out})
}

// findSpec returns owner's spec called name ("" is the default). A
// notebook's usual "python3" names the python environment.
func (g *Gateway) findSpec(owner, name string) (Spec, error) {
	specs := g.backend.Specs(owner)
	if len(specs) == 0 {
		return Spec{}, core.Errorf("jupyter", core.ErrNotFound, "this API key may start no kernel")
	}
	if name == "" {
		return specs[0], nil
	}
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
	}
	if name == "python3" {
		for _, s := range specs {
			if s.Name == "python" {
				return s, nil
			}
		}
	}
	return Spec{}, core.Errorf("jupyter", core.ErrNotFound, fmt.Sprintf("no kernelspec %q for this API key", name))
}

// getSpec answers GET /api/kernelspecs/{name}.
func (g *Gateway) getSpec(w http.ResponseWriter, r *http.Request) {
	s, err := g.findSpec(ownerOf(r), r.PathValue("name"))
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, specJSON(s))
}

// specResource answers GET /kernelspecs/{name}/{path}: Airlock's specs
// have no resources (logos), so always 404.
func (g *Gateway) specResource(w http.ResponseWriter, r *http.Request) {
	g.cfg.WriteError(w, r, core.Errorf("jupyter", core.ErrNotFound, "kernelspec resources are not served"))
}

// model is a kernel as the REST API shows it.
func (g *Gateway) model(owner string, s Session, name string) wire.Kernel {
	state, conns, last := executionState(s.State), 0, s.LastUsed
	if k := g.lookup(owner, s.ID); k != nil {
		busy, n, kl := k.state()
		conns = n
		if busy {
			state = "busy"
		}
		if kl.After(last) {
			last = kl
		}
	}
	if last.IsZero() {
		last = time.Now()
	}
	return wire.Kernel{ID: kernelID(s.ID), Name: name, LastActivity: isoTime(last), ExecutionState: state, Connections: conns}
}

// executionState is a session's state as Jupyter's execution_state,
// which knows no hibernation: a hibernated session answers its next
// request (it wakes first), so it is idle to Jupyter, as is an unknown
// ("") one.
func executionState(state string) string {
	switch state {
	case "", "hibernated":
		return "idle"
	}
	return state
}

// defaultName is the kernel name of owner's sessions.
func (g *Gateway) defaultName(owner string) string {
	if specs := g.backend.Specs(owner); len(specs) > 0 {
		return specs[0].Name
	}
	return "python"
}

// listKernels answers GET /api/kernels: every session of the key.
func (g *Gateway) listKernels(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	ss, err := g.backend.Sessions(r.Context(), owner)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	out := make([]wire.Kernel, 0, len(ss))
	for _, s := range ss {
		out = append(out, g.model(owner, s, g.kernelName(owner, s)))
	}
	writeJSON(w, http.StatusOK, out)
}

// startKernel answers POST /api/kernels with 201 and the new kernel.
func (g *Gateway) startKernel(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	var req wire.StartKernelRequest
	body, err := io.ReadAll(r.Body)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			g.cfg.WriteError(w, r, core.Errorf("jupyter", core.ErrInvalid, "the body is not a JSON object with \"name\": "+err.Error()))
			return
		}
	}
	spec, err := g.findSpec(owner, req.Name)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	id, err := g.backend.Open(r.Context(), owner, spec)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	g.kernel(owner, id, 0)
	now := time.Now()
	writeJSON(w, http.StatusCreated, g.model(owner, Session{ID: id, Created: now, LastUsed: now, State: "idle"}, spec.Name))
}

// getKernel answers GET /api/kernels/{id}.
func (g *Gateway) getKernel(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	s, err := g.backend.Session(r.Context(), owner, sessionID(r.PathValue("id")))
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g.model(owner, s, g.kernelName(owner, s)))
}

// deleteKernel answers DELETE /api/kernels/{id} with 204: the session ends.
func (g *Gateway) deleteKernel(w http.ResponseWriter, r *http.Request) {
	if err := g.shutdown(r.Context(), ownerOf(r), sessionID(r.PathValue("id"))); err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// interruptKernel answers POST /api/kernels/{id}/interrupt with 204.
func (g *Gateway) interruptKernel(w http.ResponseWriter, r *http.Request) {
	owner, id := ownerOf(r), sessionID(r.PathValue("id"))
	if err := g.backend.Interrupt(r.Context(), owner, id); err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	if k := g.lookup(owner, id); k != nil {
		k.touch()
	}
	w.WriteHeader(http.StatusNoContent)
}

// restartKernel answers POST /api/kernels/{id}/restart with 200 and the
// kernel: a fresh Python process, the same files.
func (g *Gateway) restartKernel(w http.ResponseWriter, r *http.Request) {
	owner, id := ownerOf(r), sessionID(r.PathValue("id"))
	if err := g.restart(r.Context(), owner, id); err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	s, err := g.backend.Session(r.Context(), owner, id)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, g.model(owner, s, g.kernelName(owner, s)))
}

// restart restarts the session's kernel and tells its clients.
func (g *Gateway) restart(ctx context.Context, owner, id string) error {
	k := g.lookup(owner, id)
	if k != nil {
		k.status(nil, "restarting")
	}
	if err := g.backend.Restart(ctx, owner, id); err != nil {
		return err
	}
	if k != nil {
		k.mu.Lock()
		k.count = 0
		k.last = time.Now()
		k.mu.Unlock()
		k.status(nil, "starting")
		k.status(nil, "idle")
	}
	return nil
}

// shutdown closes the session and the kernel's connections.
func (g *Gateway) shutdown(ctx context.Context, owner, id string) error {
	err := g.backend.Close(ctx, owner, id)
	if err == nil || core.CodeOf(err) == core.ErrNotFound {
		g.forget(owner, id)
	}
	return err
}

// kernelName is the kernel name of owner's session s: the spec of its
// environment, else the default one.
func (g *Gateway) kernelName(owner string, s Session) string {
	if s.Environment != "" {
		for _, sp := range g.backend.Specs(owner) {
			if sp.environment() == s.Environment {
				return sp.Name
			}
		}
	}
	return g.defaultName(owner)
}
