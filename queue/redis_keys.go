package queue

// keyspace builds every Redis key and channel of one queue. All of them
// carry the hash tag {Name}, so a queue lives in one Redis Cluster slot and
// every Lua script touches keys of a single slot.
//
//	<p>:{<q>}:jobs             stream   shared job stream, consumer group "workers"
//	<p>:{<q>}:w:<worker>       stream   one worker's stream (jobs of its sessions)
//	<p>:{<q>}:job:<id>         hash     job state, fencing attempt, outcome (TTL)
//	<p>:{<q>}:active           zset     unfinished job IDs scored by deadline (depth)
//	<p>:{<q>}:owner:<owner>    zset     one owner's unfinished job IDs (in-flight limit)
//	<p>:{<q>}:sess:<session>   string   session → worker ID (TTL SessionTTL)
//	<p>:{<q>}:alive:<worker>   string   worker liveness (TTL LivenessTTL)
//	<p>:{<q>}:dead             stream   dead-lettered jobs (capped)
//	<p>:{<q>}:reply:<client>   channel  "job finished" notices for one caller process
//	<p>:{<q>}:cancel           channel  "job cancelled" notices for workers
type keyspace struct{ base string }

// group is the consumer group on every job stream.
const group = "workers"

// newKeyspace returns the keys of queue name under prefix.
func newKeyspace(prefix, name string) keyspace { return keyspace{base: prefix + ":{" + name + "}"} }

// stream is the shared job stream.
func (k keyspace) stream() string { return k.base + ":jobs" }

// workerStream is worker w's own stream, for jobs of its sessions.
func (k keyspace) workerStream(w string) string { return k.base + ":w:" + w }

// job is job id's state hash.
func (k keyspace) job(id string) string { return k.base + ":job:" + id }

// active is the set of unfinished jobs, scored by deadline.
func (k keyspace) active() string { return k.base + ":active" }

// owner is owner o's set of unfinished jobs, scored by deadline.
func (k keyspace) owner(o string) string { return k.base + ":owner:" + o }

// session maps session s to its worker.
func (k keyspace) session(s string) string { return k.base + ":sess:" + s }

// alive is worker w's liveness key.
func (k keyspace) alive(w string) string { return k.base + ":alive:" + w }

// dead is the dead-letter stream.
func (k keyspace) dead() string { return k.base + ":dead" }

// reply is the pub/sub channel of caller process client.
func (k keyspace) reply(client string) string { return k.base + ":reply:" + client }

// cancel is the pub/sub channel announcing cancelled running jobs.
func (k keyspace) cancel() string { return k.base + ":cancel" }
