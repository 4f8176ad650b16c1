// Package runs is the spine between chats and agents: signed run envelopes, the Redis run queue,
// the worker pool that calls a Handler, and the run-event types the channels layer renders.
//
// # Envelopes
//
// The router builds an Envelope, signs it with a Signer (HMAC-SHA256 over Canonical, a
// length-prefixed encoding of every field but Attempt and Sig; newest key signs, every key of the
// ring verifies) and enqueues it. Workers decode and verify before anything runs; an unsigned,
// forged, tampered or malformed envelope is dead-lettered with its reason and counted, never run.
//
// # Queue design
//
// Per conversation (keys tagged {conv:<128-bit hash of conv.Key.String>}, one cluster slot):
//
//	<prefix>{conv:h}:q   list, the mailbox: "<run id>\n<envelope>" entries, head first
//	<prefix>{conv:h}:st  hash, exists exactly while the conversation is scheduled: lease owner and
//	                     deadline (ms, compared with the caller's clock, so leases also expire on
//	                     the embedded miniredis), active run id and its attempt count, cancel flag
//	<prefix>{conv:h}:seen:<event>  string, the run id queued for an inbound event (EnqueueOnce),
//	                     set by the script that puts the run in the mailbox, for the dedupe TTL
//
// Global (keys tagged {global}, one slot): the ready stream of hints ("conversation h may have
// work") read by the consumer group "workers", the dead-letter stream, the pause flag, the
// admitted set (global backpressure: a hash from "<tag>|<run id>" of every admitted, unfinished
// run to its admission time on Redis's clock; its HLEN is the pending count that
// runs.max_pending limits), the stats hash (totals) and the recent hash (per-minute counters of
// the last hour, on Redis's clock, written by the same settle call), and the unhinted index (a
// sorted set of "<tag>|<run id>" of runs whose enqueuer is between its two steps, by the
// enqueuer's clock). No script touches both kinds.
//
// Enqueue takes two steps, one per slot, in the order that fits the conversation. An idle one
// receives the entry and a fresh state in one script — invisible to workers, since no hint exists
// yet — and a second script on the global slot checks the pause flag and the global limit, admits
// the run (adds its member), adds the hint and takes the run out of the unhinted index (a refusal
// retracts the entry). The run went into that index just before the first script: in the same
// pipeline on one node (Redis runs it in order), acknowledged first on a cluster (whose pipelines
// run their nodes' parts concurrently). So a process that dies between the two steps leaves an
// index entry, and every recoverer tick a range query over entries older than rescueAge (2 s)
// finds it and hints the conversation: the chat is answered within seconds, at the cost of one
// query per tick whatever the number of conversations. A scheduled one is admitted globally first
// and then appended; its worker will reach it — unless it went idle meanwhile: then the append
// pushes nothing and the run takes the idle order's index, push and hint. That append is refused
// when the admission is older than half the reconciliation age (below): a run never sits in a
// mailbox uncounted. Which order to take is a guess from
// conversations this process recently saw scheduled (scheduled.go): right, it costs two round
// trips; wrong, three (the probe finds the conversation scheduled) or four (the append finds it
// idle, then the run is indexed and pushed, and the conversation hinted); on a cluster the index
// write of an idle conversation's enqueue is one round trip more. So a conversation has one hint per scheduling, and its runs sit in one list.
//
// Workers read hints in batches (XREADGROUP), claim the conversation's lease (a script that
// returns the head entry), run it, and acknowledge it with a script that pops it and hands over
// the next entry under the same lease — a busy conversation costs one round trip per run on the
// worker side and is never interleaved: FIFO and one at a time per conversation, any number of
// conversations in parallel across any number of processes. When the mailbox is empty the state
// is deleted and the hint acknowledged. Spent hints, counters and the finished runs' members of
// the admitted set are flushed in batches by the settler.
//
// A worker's heartbeat extends its leases and resets the idle time of its hints every third of a
// lease (default 10 s). A worker that dies (even SIGKILL) stops both: a lease and a recoverer tick
// later its hint is idle long enough for another process's recoverer (XAUTOCLAIM, every tick) to
// take it, and the claim script hands over the conversation because the lease deadline has
// passed: about one lease after the last heartbeat. The interrupted run starts again with its
// attempt count carried on, so a run that keeps killing workers is dead-lettered after
// MaxAttempts. A claim that finds a live lease leaves the hint pending as a watchdog.
//
// Every tick (a tenth of a lease, 100 ms to 1 s) each process's recoverer also rescues: a run
// indexed as unhinted for more than 2 s whose conversation nobody holds is hinted again, and
// admitted if it was not. Every five leases it also sweeps:
//
//   - Rescue scan, at the first sweep and hourly: a scan of every conversation for one whose hint
//     was asked for two leases ago and never claimed, and is no longer in the ready stream — the
//     backstop of the index, for runs queued by a version without it. A conversation a worker
//     holds (running, waiting on a platform, waiting out a retry) or whose hint still waits for a
//     free worker is not rescued.
//   - Reconciliation: a process killed between an ack and its settler's flush, or between
//     admitting a run and appending it, leaves a member in the admitted set whose run is in no
//     mailbox; over many crashes the queue would refuse every message as busy. The sweep scans
//     for members older than the reconciliation age (four leases, at least a minute), asks each
//     conversation's slot which of their runs are no longer in its mailbox (at time t, Redis's
//     clock), then removes those members from the global slot if admitted at or before t minus the
//     age: two scripts, one per slot. It never forgets a live run: a run leaves its mailbox only
//     when finished, cancelled or dead-lettered and comes back only as a replayed dead letter,
//     admitted anew (a younger member); and an admitted run's append is refused once older than
//     half the age. Redis nodes' clocks must agree within half the age on a cluster.
//   - Consumer pruning: every process start adds a consumer to the group; consumers that hold no
//     pending hint and have been idle ten leases are deleted (XGROUP DELCONSUMER in the same
//     script as the XINFO CONSUMERS that found them, so none takes a hint in between). A dead
//     consumer's hints are reclaimed by XAUTOCLAIM first; one holding a hint is never deleted.
//     A live consumer deleted in a quiet spell loses nothing: Redis recreates it at its next read.
//
// Rescues are logged per incident, not per conversation (rescuelog.go): one Warn with the count
// when a spell of rescues begins, a Debug line per conversation.
//
// Round trips per run. Every script call goes through a group commit (internal/redisbatch):
// calls made while a pipeline is in flight queue and leave together in the next one, so under
// load many runs share one network round trip, and a lone call still costs one. Commands per run:
// enqueue 2, and the index write for an idle conversation (3 and 4 when the guess is wrong); claim 1
// (idle conversations only); ack 1; plus the batched hint reads, settles and the rescue's range
// query each recoverer tick — about 3.35 per run in BenchmarkThroughput (3.22 before the
// index), in about 0.4 network round trips per run with 8 workers (0.6 when two pipelines were
// let in flight at once; bench_test.go says how each figure is measured). The sweeps are per
// process and period, not per run.
//
// Retries: a transient handler error keeps the lease and retries in place after exponential
// backoff with jitter (RetryBase doubling up to RetryMax), up to MaxAttempts, then the run is
// dead-lettered and the user told. Permanent(err) fails at once. Cancels (interrupt policy,
// Queue.Cancel) set the conversation's cancel flag and publish the run id; the worker holding it
// cancels the handler's context (pub/sub, backed by the heartbeat's poll of the flag).
//
// Redis outages: every component keeps going while Redis is unreachable and resumes by itself
// when it answers again (outage.go). Loops back off (100 ms doubling to 2 s), workers wait for
// Redis to claim, acknowledge and renew rather than drop what they hold, the settler keeps its
// batch, and each repeated failure is logged a few times, with one line on recovery.
//
// Shutdown stops the fetcher and recoverer, lets in-flight runs finish until its deadline, then
// cancels them and releases their leases with a fresh hint, so another worker takes them at once.
// HandBack (a process leaving a shared Redis) does the same without waiting: its runs start again
// on other processes within a round trip. Neither counts a hand-back as an error.
package runs
