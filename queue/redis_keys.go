package queue

// keyspace builds every Redis key and channel of one queue. All of them
// carry the hash tag {Name}, so a queue lives in one Redis Cluster slot and
// every Lua script touches keys of a single slot.
//
//	<p>:{<q>}:jobs             stream   interactive lane, consumer group "workers"
//	<p>:{<q>}:batch            stream   batch lane (served when no interactive job waits)
//	<p>:{<q>}:w:<worker>       stream   one worker's stream (jobs of its sessions)
//	<p>:{<q>}:active           zset     job IDs: live scored by deadline ms, ended by
//	                                    deadline − terminalOffset (the one-outcome CAS)
//	<p>:{<q>}:res:<id>         string   a job's encoded outcome (TTL ResultTTL)
//	<p>:{<q>}:owner:<owner>    zset     one owner's live job IDs (in-flight limit)
//	<p>:{<q>}:sess:<session>   string   session → worker ID (TTL SessionTTL)
//	<p>:{<q>}:alive:<worker>   string   worker liveness (TTL LivenessTTL)
//	<p>:{<q>}:pulse:<worker>   channel  never published to: the worker's subscription
//	                                    to it lives exactly as long as its connection
//	<p>:{<q>}:dead             stream   dead-lettered jobs (capped)
//	<p>:{<q>}:env:<hash>       zset     workers holding environment <hash>, scored by
//	                                    the ms their advertisement lapses
//	<p>:{<q>}:reply:<client>   channel  progress and done notices for one caller process
//	<p>:{<q>}:cancel           channel  done notices of jobs ended by a caller (workers
//	                                    cancel the handler; other callers wake)
type keyspace struct{ base string }

// group is the consumer group on every job stream.
const group = "workers"

// newKeyspace returns the keys of queue name under prefix.
func newKeyspace(prefix, name string) keyspace { return keyspace{base: prefix + ":{" + name + "}"} }

// stream is the interactive lane's stream.
func (k keyspace) stream() string { return k.base + ":jobs" }

// batchStream is the batch lane's stream.
func (k keyspace) batchStream() string { return k.base + ":batch" }

// laneStream is the stream of lane l.
func (k keyspace) laneStream(l Lane) string {
	if l == LaneBatch {
		return k.batchStream()
	}
	return k.stream()
}

// workerStream is worker w's own stream, for jobs of its sessions.
func (k keyspace) workerStream(w string) string { return k.base + ":w:" + w }

// res is job id's outcome key.
func (k keyspace) res(id string) string { return k.base + ":res:" + id }

// active is the set of jobs, scored by deadline (live) or terminal score.
func (k keyspace) active() string { return k.base + ":active" }

// owner is owner o's set of live jobs, scored by deadline.
func (k keyspace) owner(o string) string { return k.base + ":owner:" + o }

// session maps session s to its worker.
func (k keyspace) session(s string) string { return k.base + ":sess:" + s }

// alive is worker w's liveness key.
func (k keyspace) alive(w string) string { return k.base + ":alive:" + w }

// pulse is worker w's pulse channel: Redis holds w's subscription to it
// while w's connection is open, and drops it the moment the connection
// closes (the worker's process died).
func (k keyspace) pulse(w string) string { return k.base + ":pulse:" + w }

// dead is the dead-letter stream.
func (k keyspace) dead() string { return k.base + ":dead" }

// reply is the pub/sub channel of caller process client.
func (k keyspace) reply(client string) string { return k.base + ":reply:" + client }

// cancel is the pub/sub channel announcing jobs ended by their callers.
func (k keyspace) cancel() string { return k.base + ":cancel" }

// envHolders is the set of workers advertising environment hash.
func (k keyspace) envHolders(hash string) string { return k.base + ":env:" + hash }
