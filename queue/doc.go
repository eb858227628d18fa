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
// returns it without running the job again; while the job is live it
// attaches to it.
//
// # Lanes
//
// Job.Lane is LaneInteractive (default) or LaneBatch. A worker takes a
// batch job only for a slot no waiting interactive job can fill, so a
// batch of thousands of items never delays interactive calls by more than
// the jobs already running; batch jobs run whenever interactive ones leave
// slots free. Both lanes count against MaxDepth and MaxPerOwner. Session
// jobs go to their session's worker whatever their lane.
//
// A worker has Concurrency slots plus WorkerConfig.InteractiveReserve
// (default 1) that batch jobs never use: it runs at most Concurrency
// batch jobs at once, and interactive and session jobs use any free slot.
// So while batch jobs fill every normal slot, up to InteractiveReserve
// interactive calls still start at once instead of waiting for a batch
// job to end. When a batch job ends, its slot goes to the next batch job
// (or to a waiting interactive one first).
//
// # Redis design
//
// Keys are built by keyspace (redis_keys.go) and all carry the hash tag
// {Config.Name}, so one queue lives in one Redis Cluster slot and each Lua
// script touches one slot. The "active" sorted set holds every job ID:
// scored by its deadline (ms) while live, and by deadline − 1e13 once it
// has an outcome. Ending a job is "ZADD active XX LT CH <that score> id":
// it succeeds once per job, whoever tries, and every writer of a job
// computes the same terminal score from the job's own deadline, so clocks
// do not matter. That one command is the compare-and-set; the winner then
// SETs the encoded outcome in the job's result key (TTL ResultTTL) and
// PUBLISHes it inside the done notice, so the caller reads nothing.
//
// Submission is one script: ZADD NX on the active set (dedupe: an existing
// live ID attaches, an ended one returns its stored outcome), ZCOUNT of
// the live scores for MaxDepth, and XADD of the entry, payload included,
// to the lane's stream (or to the session holder's own stream). Workers
// XREADGROUP the interactive lane and their own stream (blocking), and the
// batch lane only for slots left free (non-blocking, COUNT = the smaller
// of the free slots and the batch slots free, never 0, so no worker holds
// an entry it cannot start; while it stays empty it is looked at after 20
// ms, doubling up to ReadBlock). While every batch slot is taken the
// worker blocks on the interactive lane and its own stream with the
// reserve slots; the first batch job to end then adds a wake entry to the
// own stream (one XADD; a blocked XREADGROUP cannot be woken otherwise,
// and an entry added before the read blocks ends it as well, so no wake
// is lost), which ends the read so the freed slot is refilled at once.
// No polling: measured, a saturated worker (Concurrency 2, reserve 1)
// costs 10.7 commands per batch item against 10.3 without a reserve
// (TestRedisBatchCommandsPerItem). A first delivery starts with
// no script: the deadline is checked in Go from the entry. The finish
// script is the CAS, SET and PUBLISH. Workers acknowledge and delete
// finished entries in batches (XACK and XDEL of up to 32 entries or 1 MiB
// of payload, or every 2 s; redis_acks.go). A one-shot call so costs 9
// commands plus its share of a batch (about 9.04 back to back; 10 at one
// call a second per worker; at most 11 when slower, where Redis is idle
// anyway), script-inner commands included. Per-owner limits (MaxPerOwner > 0) add 4 (owner set
// ZADD, ZCOUNT, PEXPIRETIME at submit, ZREM at finish); session jobs add 3
// at submit (GET of the binding outside, GET and EXISTS inside) and 1–2
// to bind or unbind at finish, and their callers 2 per second of waiting
// (EVALSHA and PUBSUB NUMSUB: the pulse check).
//
// Heartbeats (every third of min(VisibilityTimeout, LivenessTTL)) reset a
// running entry's idle time with XCLAIM JUSTID only while this worker still
// owns it with the delivery count it started with (the fencing token and
// Job.Attempt), and refresh the worker's liveness key; they also sweep
// active-set members ResultTTL past their deadline. A worker that dies or
// stalls stops heartbeating; after VisibilityTimeout another worker takes
// the entry with XAUTOCLAIM (which counts a delivery) and a takeover
// script checks it: skipped if the job has ended or its deadline passed,
// dead-lettered past MaxDeliveries (the caller is told), run otherwise. A
// stalled worker that resumes learns at its next heartbeat that it lost
// the lease and drops its result ("stale result discarded"); a result it
// finishes before that heartbeat competes in the CAS like any other: the
// job gets the outcome of whichever complete run finished first, and a
// later one is discarded.
//
// Callers wait without polling: each process holds one pub/sub
// subscription on its reply channel and the queue's cancel channel, and
// Do sleeps on a Go channel until a done notice, its deadline or its
// context. Outcomes are stored, so a notice missed while Redis restarted
// is recovered by re-reading every waiter's outcome after re-subscribing. A
// caller that attached to a job submitted by another process (whose
// notices go there) re-reads the outcome every 0.1–2 s. A cancelled or
// timed-out caller writes that outcome (if first), deletes the job's entry
// if it has not been read (it never runs), and publishes the outcome on
// the cancel channel: a worker running the job cancels the handler's
// context (the sandbox handler then kills its container), and other
// processes' waiters wake. Session callers also watch the worker holding
// the session (redis_holder.go), and end the job with ErrSessionLost when
// it is gone: its pulse (a subscription to its own channel, which Redis
// drops the moment the worker's process dies and its connection closes,
// kill -9 included, and keeps through a stall or a partition) missing at
// four checks a second apart, or its liveness key missing at two checks
// LivenessTTL/2 apart (a host gone without closing its connections). A
// killed worker's callers so learn it within about 4 s, while a worker
// whose Redis link stalls keeps its sessions for LivenessTTL.
//
// Redis down: submissions fail with ErrUnavailable within a dial attempt;
// callers already waiting keep waiting (until their deadline) and resume
// when Redis returns; workers retry with backoff and recreate their
// consumer groups if Redis lost them. Redis full (maxmemory, noeviction):
// every writing script starts with "#!lua", which Redis refuses as a whole
// before running any of it, so a submission is refused (ErrUnavailable,
// not run) with nothing written; heartbeats use no command Redis refuses
// when full (leases with XCLAIM in a script without a shebang, liveness
// and bindings with PEXPIRE; SET only for a liveness key that is missing),
// so leases and sessions hold and nothing finished runs again. With
// appendonly yes, jobs accepted before a restart are kept (appendfsync
// everysec can lose the last second if Redis itself crashes; use always
// to close that window).
//
// # Environments
//
// A worker whose WorkerConfig.Environments lists the content hashes of
// the environment images it holds advertises them in each heartbeat (a
// sorted set per hash, scored by when the advertisement lapses; Advertise
// runs a beat at once after a build). Do sends a job whose
// Job.Environment is set, and that has no Session, to a live advertiser,
// chosen at random, through that worker's own stream, and watches that
// worker like a session's; if it dies (its pulse or liveness key gone)
// the caller moves the job to its lane (moveScript), and a holder that
// shuts down moves the jobs still in its stream there itself, so another
// worker runs them (building the environment first): such a job is not
// lost, and like any lane job may run twice if its holder died running
// it. When
// nobody advertises the hash the job goes to its lane as any job does,
// with Job.BuildAllowance added to its deadline, and the worker that
// takes it builds the image first (environments/hosts).
//
// # Delivery guarantees
//
// At-least-once execution, exactly-one outcome per job ID. A job may run
// more than once (worker died or stalled past VisibilityTimeout, or a
// worker was stopped past its grace period); that is acceptable for
// one-shot sandbox jobs, which have no outside effects. A job whose only
// caller cancelled it after attaching (from a second Do with its ID)
// while it was still queued may still be run once; its result is
// discarded.
//
// # Metrics
//
// With Deps.Registerer: airlock_queue_depth (gauge, queue-wide unfinished
// jobs), airlock_queue_inflight_jobs (gauge, this process's running jobs),
// airlock_queue_retries_total, airlock_queue_dead_letters_total,
// airlock_queue_wait_seconds (enqueue→start) and airlock_queue_job_seconds
// (end-to-end Do time by outcome), all with a "backend" label.
package queue
