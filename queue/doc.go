// Package queue carries jobs from callers (the dispatcher) to a pool of
// workers (airlock worker) and their single outcome back. It never looks
// inside a job: payloads and replies are opaque bytes (the dispatcher puts
// JSON of a sandbox request in, workers put JSON of a sandbox result back).
//
// # Two backends, one contract
//
// Open returns Redis (Redis Streams with consumer groups; production, any
// number of worker processes on any hosts) when a Redis URL or client is
// configured, and Memory (in-process, workers embedded in the same
// process; make run needs no Redis) otherwise. Both pass the same contract
// suite (contract_test.go).
//
// Caller side: Queue.Do(ctx, Job) submits and waits for the outcome,
// bounded by the job deadline (the earlier of Job.Deadline and ctx's) and
// by ctx. Worker side: Queue.NewWorker(cfg, Handler) and Worker.Run(ctx).
//
// # Outcomes
//
// Do returns the handler's Reply.Payload, or an error wrapping exactly one
// sentinel: ErrBusy (admission: MaxDepth or MaxPerOwner reached; nothing
// enqueued), ErrUnavailable (Redis unreachable at submission; retry with
// the same Job.ID, which attaches rather than duplicates), ErrJobFailed
// (the handler returned a Go error or panicked: a platform failure, not
// retried), ErrDeadLetter (the job was started MaxDeliveries times and
// every worker running it died), ErrSessionLost (no live worker holds
// Job.Session), ErrDeadline, ErrCanceled, ErrClosed. What user code did
// (exit status, timeout, OOM) belongs in the reply payload, never here.
//
// Exactly one outcome is stored per job ID: every writer (worker result,
// caller cancel or deadline, dead-lettering, session loss) goes through an
// atomic compare-and-set on the job state, and the first one wins. A
// second Do with the same ID while the outcome is kept (Config.ResultTTL)
// returns it without running the job again.
//
// # Redis design
//
// Keys are built by keyspace (redis_keys.go) and all carry the hash tag
// {Config.Name}, so one queue lives in one Redis Cluster slot and each Lua
// script touches one slot. Submission is one script: admission against the
// "active" and per-owner sorted sets (scored by deadline, so entries of
// callers that died expire by themselves), the job hash, and XADD to the
// shared stream, or to the session holder's own stream for session jobs.
//
// Workers XREADGROUP from the shared stream and their own stream. A start
// script increments the job's attempt counter, which is the fencing token;
// heartbeats (every third of min(VisibilityTimeout, LivenessTTL)) reset
// the message's idle time with XCLAIM only while the token is current, and
// refresh the worker's liveness key. A worker that dies or stalls stops
// heartbeating; after VisibilityTimeout another worker takes the message
// with XAUTOCLAIM and starts it with a new token, so the stalled worker's
// heartbeat and its late result are rejected ("stale result discarded").
// The finish script stores the result only if the token is current and no
// outcome exists, binds or unbinds sessions in the same step, publishes a
// notice to the caller and XACKs and XDELs the message. A start beyond
// MaxDeliveries moves the job to the dead-letter stream instead and tells
// the caller.
//
// Callers wait without polling: each process holds one pub/sub
// subscription on its reply channel, and Do sleeps on a Go channel until a
// notice, its deadline or its context. Outcomes live in the job hash, so a
// notice missed while Redis restarted is recovered by re-reading every
// waiter's hash after re-subscribing. A cancelled or timed-out caller
// writes that outcome (if first) and, if the job is running, publishes on
// the cancel channel; the worker cancels the handler's context (the
// sandbox handler then kills its container). Session callers also check
// every LivenessTTL/2 that the holder's liveness key exists, and end the
// job with ErrSessionLost when it does not.
//
// Redis down: submissions fail with ErrUnavailable within a dial attempt;
// callers already waiting keep waiting (until their deadline) and resume
// when Redis returns; workers retry with backoff and recreate their
// consumer groups if Redis lost them. With appendonly yes, jobs accepted
// before a restart are kept (appendfsync everysec can lose the last second
// if Redis itself crashes; use always to close that window).
//
// # Delivery guarantees
//
// At-least-once execution, exactly-one outcome per job ID. A job may run
// more than once (worker died or stalled past VisibilityTimeout, or a
// worker was stopped past its grace period); that is acceptable for
// one-shot sandbox jobs, which have no outside effects.
//
// # Metrics
//
// With Deps.Registerer: airlock_queue_depth (gauge, queue-wide unfinished
// jobs), airlock_queue_inflight_jobs (gauge, this process's running jobs),
// airlock_queue_retries_total, airlock_queue_dead_letters_total,
// airlock_queue_wait_seconds (enqueue→start) and airlock_queue_job_seconds
// (end-to-end Do time by outcome), all with a "backend" label.
package queue
