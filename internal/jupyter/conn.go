package jupyter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock-dev/airlock/core"
)

// writeTimeout bounds one websocket write; a client that reads slower is
// disconnected (it may reconnect: the kernel lives on).
const writeTimeout = 30 * time.Second

// conn is one websocket connection to a kernel.
type conn struct {
	k    *kernel
	ws   *websocket.Conn
	ctx  context.Context
	stop context.CancelFunc
	once sync.Once
}

// channels serves GET /api/kernels/{id}/channels: the websocket carrying
// every channel of the messaging protocol.
func (g *Gateway) channels(w http.ResponseWriter, r *http.Request) {
	owner, id := ownerOf(r), sessionID(r.PathValue("id"))
	s, err := g.backend.Session(r.Context(), owner, id)
	if err != nil {
		g.cfg.WriteError(w, r, err)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept answered the client
	}
	ws.SetReadLimit(g.cfg.MaxMessageBytes)
	k := g.kernel(owner, id, s.ExecCount)
	ctx, stop := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &conn{k: k, ws: ws, ctx: ctx, stop: stop}
	k.attach(c)
	defer k.detach(c)
	go func() {
		select {
		case <-ctx.Done():
		case <-k.ctx.Done():
			c.close("the kernel was shut down")
		case <-g.cfg.Stop:
			c.close("the server is shutting down")
		}
	}()
	c.read()
}

// read handles the client's messages until the connection ends.
func (c *conn) read() {
	defer c.close("")
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return
		}
		m, err := parseMessage(data, typ == websocket.MessageBinary)
		if err != nil {
			c.k.g.cfg.Logger.Warn("jupyter: bad message", "kernel", c.k.id, "err", err)
			continue
		}
		c.route(m)
	}
}

// route dispatches one message by channel and type.
func (c *conn) route(m inMsg) {
	k := c.k
	if m.Channel == "" {
		m.Channel = defaultChannel(m.Header.MsgType)
	}
	switch m.Channel {
	case "shell":
		switch m.Header.MsgType {
		case "kernel_info_request", "comm_info_request", "history_request", "connect_request":
			c.immediate(m, "shell")
		default:
			k.enqueue(shellReq{c: c, m: m})
		}
	case "control":
		go c.control(m)
	case "stdin":
		if m.Header.MsgType == "input_reply" {
			go c.inputReply(m)
		}
	}
}

// defaultChannel is the channel of a message that names none, as
// jupyter_server 1.23's GatewayKernelClient sends them (Kernel Gateway
// assumes shell): the channel its type belongs to.
func defaultChannel(msgType string) string {
	switch msgType {
	case "input_reply":
		return "stdin"
	case "interrupt_request", "shutdown_request", "debug_request":
		return "control"
	}
	return "shell"
}

// immediate answers a request that needs no kernel, between busy and idle.
func (c *conn) immediate(m inMsg, channel string) {
	k := c.k
	var content any
	switch m.Header.MsgType {
	case "kernel_info_request":
		content = kernelInfo()
	case "comm_info_request":
		content = map[string]any{"status": "ok", "comms": map[string]any{}}
	case "history_request":
		content = map[string]any{"status": "ok", "history": []any{}}
	case "connect_request":
		content = map[string]any{"shell_port": 0, "iopub_port": 0, "stdin_port": 0, "hb_port": 0, "control_port": 0}
	default:
		content = map[string]any{"status": "error", "ename": "UnknownRequest", "evalue": m.Header.MsgType + " is not supported", "traceback": []string{}}
	}
	k.status(&m, "busy")
	c.send(reply(k.ksid, &m, channel, replyType(m.Header.MsgType), content))
	k.status(&m, "idle")
}

// control handles a control-channel request: interrupt, shutdown (with
// restart), kernel info.
func (c *conn) control(m inMsg) {
	k := c.k
	k.touch()
	switch m.Header.MsgType {
	case "interrupt_request":
		content := map[string]any{"status": "ok"}
		if err := k.g.backend.Interrupt(c.ctx, k.owner, k.id); err != nil {
			content = map[string]any{"status": "error", "ename": "AirlockError", "evalue": err.Error(), "traceback": []string{}}
		}
		c.send(reply(k.ksid, &m, "control", "interrupt_reply", content))
	case "shutdown_request":
		var q struct {
			Restart bool `json:"restart"`
		}
		_ = json.Unmarshal(m.Content, &q)
		content := map[string]any{"status": "ok", "restart": q.Restart}
		var err error
		if q.Restart {
			err = k.g.restart(c.ctx, k.owner, k.id)
		} else {
			err = k.g.backend.Close(c.ctx, k.owner, k.id)
			if err == nil || core.CodeOf(err) == core.ErrNotFound {
				defer k.g.forget(k.owner, k.id) // after the replies
			}
		}
		if err != nil {
			content = map[string]any{"status": "error", "restart": q.Restart, "ename": "AirlockError", "evalue": err.Error(), "traceback": []string{}}
		}
		out := reply(k.ksid, &m, "control", "shutdown_reply", content)
		c.send(out)
		out.Channel = "iopub"
		k.publish(out)
	case "kernel_info_request":
		c.immediate(m, "control")
	default:
		c.send(reply(k.ksid, &m, "control", replyType(m.Header.MsgType),
			map[string]any{"status": "error", "ename": "UnknownRequest", "evalue": m.Header.MsgType + " is not supported", "traceback": []string{}}))
	}
}

// inputReply hands the client's answer to the input() the cell waits in.
func (c *conn) inputReply(m inMsg) {
	var q struct {
		Value string `json:"value"`
	}
	_ = json.Unmarshal(m.Content, &q)
	k := c.k
	k.mu.Lock()
	waiting := k.input == c
	if waiting {
		k.input = nil
	}
	k.mu.Unlock()
	if !waiting {
		return
	}
	if err := k.g.backend.Input(c.ctx, k.owner, k.id, q.Value); err != nil {
		k.g.cfg.Logger.Warn("jupyter: input reply failed", "kernel", k.id, "err", err)
	}
}

// send writes m; a failed or slow write ends the connection.
func (c *conn) send(m outMsg) {
	data, err := json.Marshal(m)
	if err != nil {
		c.k.g.cfg.Logger.Warn("jupyter: unencodable message", "type", m.MsgType, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, data); err != nil && !errors.Is(err, context.Canceled) {
		c.close("")
	}
}

// close ends the connection once, with reason when the server ends it.
func (c *conn) close(reason string) {
	c.once.Do(func() {
		if reason != "" {
			_ = c.ws.Close(websocket.StatusGoingAway, reason)
		} else {
			_ = c.ws.CloseNow()
		}
		c.stop()
	})
}

// kernelInfo is the kernel_info_reply content.
func kernelInfo() map[string]any {
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       ProtocolVersion,
		"implementation":         "airlock",
		"implementation_version": "1",
		"language_info": map[string]any{
			"name": "python", "version": "3", "mimetype": "text/x-python", "file_extension": ".py",
			"pygments_lexer": "ipython3", "codemirror_mode": map[string]any{"name": "ipython", "version": 3},
			"nbconvert_exporter": "python",
		},
		"banner":     "Python 3 in an Airlock sandbox session",
		"help_links": []any{},
		"debugger":   false,
	}
}
