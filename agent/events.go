package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// eventLog appends a run's events to its log in the state store (kind
// "runevents"), so Event.Seq is the store's dense sequence number and any
// replica sharing the store can replay and follow it.
type eventLog struct {
	store  state.Store
	key    state.Key
	now    func() time.Time
	logger *slog.Logger
	ttl    time.Duration
}

// eventsKey names the event log of owner's run id.
func eventsKey(owner, id string) state.Key {
	return state.Key{Kind: "runevents", Owner: owner, ID: id}
}

// emit appends an event whose data is v encoded as JSON.
// A store failure is logged: the run goes on, the event is lost.
func (l *eventLog) emit(typ wire.EventType, step int, v any) wire.RunEvent {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": "encode event: " + err.Error()})
	}
	ev := wire.RunEvent{Type: typ, Time: l.now(), Step: step, Data: data}
	b, err := json.Marshal(ev)
	if err != nil {
		l.logger.Warn("encode run event", "run", l.key.ID, "err", err)
		return ev
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seq, err := l.store.Append(ctx, l.key, b, 0, l.ttl)
	if err != nil {
		l.logger.Warn("append run event", "run", l.key.ID, "type", typ, "err", err)
		return ev
	}
	ev.Seq = int(seq)
	return ev
}

// decodeEvent reads one stored event; its Seq is the entry's.
func decodeEvent(e state.Entry) (wire.RunEvent, error) {
	var ev wire.RunEvent
	if err := json.Unmarshal(e.Data, &ev); err != nil {
		return wire.RunEvent{}, err
	}
	ev.Seq = int(e.Seq)
	return ev, nil
}

// followEvents streams the events of owner's run id with Seq > after
// until a run_finished event is delivered (or the run is final and the
// log drained), or ctx is done; the channel is then closed.
func (m *Manager) followEvents(ctx context.Context, owner, id string, after int) <-chan wire.RunEvent {
	out := make(chan wire.RunEvent, 16)
	key := eventsKey(owner, id)
	go func() {
		defer close(out)
		next := int64(max(after, 0))
		idle := 0
		for {
			entries, err := m.store.Range(ctx, key, next, 256, m.cfg.PollWait)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				m.logger.Warn("read run events", "run", id, "err", err)
				if sleepCtx(ctx, m.cfg.PollWait) != nil {
					return
				}
			}
			for _, e := range entries {
				ev, err := decodeEvent(e)
				next = e.Seq
				if err != nil {
					m.logger.Warn("decode run event", "run", id, "seq", e.Seq, "err", err)
					continue
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Type == wire.EventRunFinished {
					return
				}
			}
			if len(entries) > 0 {
				idle = 0
				continue
			}
			// Nothing new: a run that ended without a run_finished event
			// (trimmed log, failed append) must not be followed forever.
			if idle++; idle%3 == 0 {
				rec, err := m.getRecord(ctx, owner, id)
				if err == nil && rec.Status.Final() {
					if entries, err := m.store.Range(ctx, key, next, 1, 0); err == nil && len(entries) == 0 {
						return
					}
				}
			}
		}
	}()
	return out
}
