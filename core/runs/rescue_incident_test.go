package runs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

// debugLogger logs everything, Debug included, to a buffer the test reads.
func debugLogger() (*slog.Logger, *logbuf.Buffer) {
	buf := &logbuf.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// logLines are the lines of logs at level (e.g. "WARN") whose message contains msg.
func logLines(logs *logbuf.Buffer, level, msg string) []string {
	var out []string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "level="+level+" ") && strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

// makeStale makes conversation tag look as if it asked for its hint an hour ago.
func makeStale(t *testing.T, q *Queue, tag string) {
	t.Helper()
	if err := q.st.Client().HSet(context.Background(), q.opt.Prefix+tag+":st", "hs", time.Now().Add(-time.Hour).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRescueLeavesWaitingAndRetryingRunsAlone proves issue 38's point on the rescue: a
// conversation whose run a worker holds — waiting (here on a gate, as a send waits its turn in a
// platform's pacer) or waiting out a retry after a service it needs was unavailable — is never
// rescued, however long ago it asked for its hint, neither by the scan nor by the unhinted
// index's rescue; nor is one whose hint waits for a free worker while every worker is busy.
// Nothing is rescued or logged as rescued, and the runs that were only waiting are answered
// once.
func TestRescueLeavesWaitingAndRetryingRunsAlone(t *testing.T) {
	ctx := context.Background()
	c := realRedis(t)
	log, logs := debugLogger()
	var rescues atomic.Int32
	retrying := make(chan struct{}, 1)
	q := newQueue(t, c, func(o *Options) {
		o.Workers = 2
		// The pool's own scan comes at its first sweep, five leases in: after this test.
		o.Lease = 10 * time.Second
		o.Logger = log
		o.OnRecovery = func(kind Recovery, n int) {
			switch kind {
			case RecoveryRescue:
				rescues.Add(int32(n))
			case RecoveryRetry:
				select {
				case retrying <- struct{}{}:
				default:
				}
			}
		}
	})
	waiting, retried, queued := testConv(1), testConv(2), testConv(3)
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	rec := newRecorder()
	p := startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		switch run.Envelope.Conv {
		case waiting:
			started <- struct{}{}
			select { // a send waiting its turn in the platform's pacer
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		case retried:
			if run.Envelope.Attempt == 1 {
				return "", &UnavailableError{Err: errors.New("the platform is unavailable"), RetryAfter: time.Hour}
			}
		}
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)

	envs := map[string]*Envelope{}
	for _, k := range []struct {
		name string
		env  *Envelope
	}{{"waiting", signedEnv(q.opt.Signer, waiting, "a send that waits")}, {"retried", signedEnv(q.opt.Signer, retried, "a run retried later")}} {
		envs[k.name] = k.env
		mustEnqueue(t, q, k.env)
	}
	<-started
	<-retrying
	// Both workers are busy: this conversation's hint waits for one of them.
	envs["queued"] = signedEnv(q.opt.Signer, queued, "a run waiting for a worker")
	mustEnqueue(t, q, envs["queued"])

	// Each looks as if it asked for its hint an hour ago; the held ones also have index entries,
	// as an enqueue between its steps leaves them.
	for _, k := range []struct {
		name string
		conv string
	}{{"waiting", waiting.HashTag()}, {"retried", retried.HashTag()}, {"queued", queued.HashTag()}} {
		makeStale(t, q, k.conv)
		if k.name == "queued" {
			continue
		}
		member := rdb.Member(k.conv, envs[k.name].RunID)
		if err := c.ZAdd(ctx, q.st.Rescues().UnhintedKey(), redis.Z{Score: float64(time.Now().Add(-time.Hour).UnixMilli()), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}

	if n := p.recoverer.rescueScan(ctx); n != 1 {
		t.Errorf("the scan left %d stale conversations waiting for a worker, want 1 (the one whose hint is queued)", n)
	}
	p.recoverer.rescue(ctx)
	if n := rescues.Load(); n != 0 {
		t.Errorf("%d conversations rescued, want none: each was held by a worker or had its hint queued", n)
	}
	for _, level := range []string{"WARN", "DEBUG", "INFO"} {
		if ls := logLines(logs, level, "never scheduled"); len(ls) > 0 {
			t.Errorf("rescues logged:\n%s", strings.Join(ls, "\n"))
		}
	}
	if n, err := c.ZCard(ctx, q.st.Rescues().UnhintedKey()).Result(); err != nil || n != 0 {
		t.Errorf("the unhinted index holds %d entries (%v), want the held conversations' dropped", n, err)
	}

	close(gate)
	eventually(t, 10*time.Second, "the waiting runs answered", func() bool {
		return rec.count(envs["waiting"].RunID) == 1 && rec.count(envs["queued"].RunID) == 1
	})
	if n := rescues.Load(); n != 0 {
		t.Errorf("%d conversations rescued, want none", n)
	}
	for _, name := range []string{"waiting", "queued"} {
		if n := rec.count(envs[name].RunID); n != 1 {
			t.Errorf("the %s run was handled %d times, want once", name, n)
		}
	}
}

// TestRescueWarnsOncePerIncident proves the rescue's log is an operator's, not a line per
// conversation: a scan that rescues many conversations logs one Warn with their number and a
// Debug line each; the unhinted index's rescue likewise, and its later passes within the same
// incident add no Warn; once the rescues have stopped for rescueQuiet the incident is over (an
// Info line with its total), and the next rescue is a new incident with a Warn of its own.
func TestRescueWarnsOncePerIncident(t *testing.T) {
	ctx := context.Background()
	log, logs := debugLogger()
	var rescues atomic.Int32
	q := newQueue(t, realRedis(t), func(o *Options) {
		o.Logger = log
		o.OnRecovery = func(kind Recovery, n int) {
			if kind == RecoveryRescue {
				rescues.Add(int32(n))
			}
		}
	})
	p, err := q.NewPool(HandlerFunc(func(context.Context, *Run) (Outcome, error) { return OutcomeAnswered, nil }), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	p.recoverer.rescues.index.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	next := 0
	// strand queues n runs in new conversations an hour ago and never hints them: indexed, as
	// an enqueuer that died between its two steps leaves them, or not, as a version without
	// the index did.
	strand := func(n int, indexed bool) {
		t.Helper()
		for range n {
			next++
			env := signedEnv(q.opt.Signer, testConv(100+next), "stranded")
			payload, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			r, err := q.st.Mailboxes().Enqueue(ctx, rdb.EnqueueReq{Tag: env.Conv.HashTag(), Probe: true, Intent: indexed, Entry: rdb.Entry(env.RunID, payload),
				Now: time.Now().Add(-time.Hour).UnixMilli(), ConvKey: env.Conv.String()})
			if err != nil || r.Status != rdb.StatusNew {
				t.Fatalf("enqueue = %+v, %v", r, err)
			}
		}
	}
	const scanWarn = "rescued conversations that were queued but never scheduled"
	const indexWarn = "rescued conversations queued but never scheduled (their enqueuer stopped between two steps)"

	strand(40, false)
	p.recoverer.rescueScan(ctx)
	if ws := logLines(logs, "WARN", scanWarn); len(ws) != 1 || !strings.Contains(ws[0], "conversations=40") {
		t.Errorf("the scan's warnings = %q, want one naming 40 conversations", ws)
	}
	if ds := logLines(logs, "DEBUG", "rescuing a conversation that was queued but never scheduled"); len(ds) != 40 {
		t.Errorf("%d debug lines for the scan's conversations, want 40", len(ds))
	}

	strand(30, true)
	p.recoverer.rescue(ctx)
	p.recoverer.rescue(ctx) // nothing left: the incident goes on quietly
	strand(10, true)
	p.recoverer.rescue(ctx) // within rescueQuiet: the same incident
	if ws := logLines(logs, "WARN", indexWarn); len(ws) != 1 || !strings.Contains(ws[0], "conversations=30") {
		t.Errorf("the index rescue's warnings = %q, want one naming 30 conversations", ws)
	}
	if ds := logLines(logs, "DEBUG", "rescuing a conversation queued but never scheduled"); len(ds) != 40 {
		t.Errorf("%d debug lines for the index rescue's conversations, want 40", len(ds))
	}

	mu.Lock()
	now = now.Add(rescueQuiet + time.Second)
	mu.Unlock()
	p.recoverer.rescue(ctx)
	if is := logLines(logs, "INFO", indexWarn+": incident over"); len(is) != 1 || !strings.Contains(is[0], "conversations=40") {
		t.Errorf("the incident's end = %q, want one line naming its 40 conversations", is)
	}
	strand(5, true)
	p.recoverer.rescue(ctx)
	if ws := logLines(logs, "WARN", indexWarn); len(ws) != 2 || !strings.Contains(ws[1], "conversations=5") {
		t.Errorf("the index rescue's warnings = %q, want a second one, for the new incident's 5", ws)
	}
	if n := rescues.Load(); n != 40+30+10+5 {
		t.Errorf("%d rescues counted, want %d", n, 40+30+10+5)
	}
	if ws := logLines(logs, "WARN", "never scheduled"); len(ws) != 3 {
		t.Errorf("%d warnings about rescues in all, want 3 (two incidents of the index, one scan):\n%s", len(ws), strings.Join(ws, "\n"))
	}
}
