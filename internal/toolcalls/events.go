package toolcalls

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// EventArtifacts rewrites a tool_result event whose data carries
// "artifacts" with bytes (core.Artifact JSON, data in base64): the bytes
// go to the artifact store and each artifact gets a /v1/artifacts/{id} URL
// instead, as in tool-call answers. Other events pass unchanged.
func (s *Service) EventArtifacts(ctx context.Context, owner string, ev wire.RunEvent) wire.RunEvent {
	if ev.Type != wire.EventToolResult || !bytes.Contains(ev.Data, []byte(`"artifacts"`)) {
		return ev
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return ev
	}
	var arts []core.Artifact
	if err := json.Unmarshal(data["artifacts"], &arts); err != nil || len(arts) == 0 {
		return ev
	}
	views, warns := s.KeepArtifacts(ctx, owner, "", arts)
	raw, err := json.Marshal(views)
	if err != nil {
		return ev
	}
	data["artifacts"] = raw
	if len(warns) > 0 {
		if w, err := json.Marshal(warns); err == nil {
			data["artifact_warnings"] = w
		}
	}
	if out, err := json.Marshal(data); err == nil {
		ev.Data = out
	}
	return ev
}
