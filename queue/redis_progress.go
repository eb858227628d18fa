package queue

import (
	"context"
	"strings"
	"time"
)

// progressPrefix starts a progress notice on a caller's reply channel:
// prefix, job id, "\n", data. Plain notices are a bare job id.
const progressPrefix = "\x00p:"

// progressBuffer is how many progress messages of one job may wait for
// Redis before new ones are dropped.
const progressBuffer = 256

// publisher sends one job's progress to its caller from its own goroutine,
// so a slow Redis never stalls the handler; flush waits for what is queued.
type publisher struct {
	w    *redisWorker
	j    Job
	ch   chan []byte
	done chan struct{}
}

// newPublisher starts the job's progress publisher; nil (nothing started,
// nothing to flush) if the job has no reply channel.
func (w *redisWorker) newPublisher(j Job) *publisher {
	if j.replyTo == "" {
		return nil
	}
	p := &publisher{w: w, j: j, ch: make(chan []byte, progressBuffer), done: make(chan struct{})}
	go p.loop()
	return p
}

// send queues data, dropping it when the buffer is full.
func (p *publisher) send(data []byte) {
	select {
	case p.ch <- append([]byte(nil), data...):
	default:
		p.w.log.Debug("progress dropped: caller or Redis too slow", "job", p.j.ID)
	}
}

// loop publishes queued messages in order.
func (p *publisher) loop() {
	defer close(p.done)
	for data := range p.ch {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		msg := progressPrefix + p.j.ID + "\n" + string(data)
		if err := p.w.q.rdb.Publish(ctx, p.j.replyTo, msg).Err(); err != nil {
			p.w.log.Debug("progress not published", "job", p.j.ID, "err", err)
		}
		cancel()
	}
}

// flush stops the publisher once everything queued is published (bounded),
// so progress reaches the caller before the outcome notice.
func (p *publisher) flush() {
	if p == nil {
		return
	}
	close(p.ch)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// parseProgress splits a progress notice into job id and data.
func parseProgress(payload string) (id string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(payload, progressPrefix)
	if !found {
		return "", nil, false
	}
	id, d, found := strings.Cut(rest, "\n")
	if !found {
		return "", nil, false
	}
	return id, []byte(d), true
}
