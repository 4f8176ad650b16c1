package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

func TestAdminOps(t *testing.T) {
	ctx := context.Background()
	c := realRedis(t)

	t.Run("depth", func(t *testing.T) {
		q := newQueue(t, c)
		for _, k := range []conv.Key{testConv(1), testConv(1), testConv(2)} {
			mustEnqueue(t, q, signedEnv(q.opt.Signer, k, "m"))
		}
		d, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[conv.Key]int64{}
		for _, cd := range d.Conversations {
			got[cd.Conv] = cd.Queued
		}
		if d.Pending != 3 || got[testConv(1)] != 2 || got[testConv(2)] != 1 || len(got) != 2 {
			t.Errorf("Depth = %+v, want 3 pending: 2 in conv 1, 1 in conv 2", d)
		}
		if cd, err := q.ConvDepth(ctx, testConv(1)); err != nil || cd.Queued != 2 || cd.Running {
			t.Errorf("ConvDepth = %+v, %v", cd, err)
		}
	})

	t.Run("list, replay and drop dead letters", func(t *testing.T) {
		q := newQueue(t, c, func(o *Options) { o.MaxAttempts = 1 })
		var broken atomic.Bool
		broken.Store(true)
		rec := newRecorder()
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			rec.handled(run)
			if broken.Load() {
				return "", errors.New("downstream is down")
			}
			return OutcomeAnswered, nil
		}), nil)
		a, b := signedEnv(q.opt.Signer, testConv(1), "a"), signedEnv(q.opt.Signer, testConv(2), "b")
		mustEnqueue(t, q, a)
		mustEnqueue(t, q, b)
		eventually(t, 5*time.Second, "two dead letters", func() bool { d, _ := q.DeadLetters(ctx, 10); return len(d) == 2 })
		broken.Store(false)
		again, err := q.Replay(ctx, a.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if again == a.RunID || again == "" {
			t.Fatalf("Replay returned run id %q; want a new one, not the dead letter's %s", again, a.RunID)
		}
		eventually(t, 5*time.Second, "the replayed run", func() bool { return rec.count(again) == 1 && stats(t, q).Answered == 1 })
		if n := rec.count(a.RunID); n != 1 {
			t.Errorf("the dead letter's own run id ran %d times, want only its failed attempt", n)
		}
		if env := rec.envelope(again); env == nil || env.Text != a.Text || env.Identity != a.Identity || env.Conv != a.Conv {
			t.Errorf("the replay ran %+v; want the dead letter's text, sender and conversation", env)
		}
		if err := q.Drop(ctx, b.RunID); err != nil {
			t.Fatal(err)
		}
		if d, _ := q.DeadLetters(ctx, 10); len(d) != 0 {
			t.Errorf("dead letters after replay and drop = %+v", d)
		}
		if _, err := q.Replay(ctx, b.RunID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Replay of a missing dead letter = %v, want ErrNotFound", err)
		}
		if err := q.Drop(ctx, b.RunID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Drop of a missing dead letter = %v, want ErrNotFound", err)
		}
	})

	t.Run("a dead letter that fails verification is not replayed", func(t *testing.T) {
		q := newQueue(t, c)
		rec := newRecorder()
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			rec.handled(run)
			return OutcomeAnswered, nil
		}), nil)
		other, err := NewSigner([][]byte{[]byte("a key this queue does not hold!!")})
		if err != nil {
			t.Fatal(err)
		}
		forged := signedEnv(other, testConv(4), "forged")
		mustEnqueue(t, q, forged)
		eventually(t, 5*time.Second, "the forged run dead-lettered", func() bool { d, _ := q.DeadLetters(ctx, 10); return len(d) == 1 })
		again, err := q.Replay(ctx, forged.RunID)
		if VerifyReason(err) != "unknown_key" || again != "" {
			t.Fatalf("Replay of a forged dead letter = %q, %v; want the unknown_key verification error", again, err)
		}
		if d, _ := q.DeadLetters(ctx, 10); len(d) != 1 || d[0].RunID != forged.RunID {
			t.Errorf("dead letters after the refused replay = %+v, want the forged one kept", d)
		}
		if rec.total() != 0 {
			t.Errorf("%d runs started; a forged envelope must never run", rec.total())
		}
	})

	t.Run("cancel queued and active runs", func(t *testing.T) {
		q := newQueue(t, c)
		rec := newRecorder()
		started := make(chan string, 10)
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			rec.handled(run)
			started <- run.Envelope.RunID
			<-ctx.Done()
			return "", ctx.Err()
		}), rec)
		k := testConv(3)
		a, b, cc := signedEnv(q.opt.Signer, k, "a"), signedEnv(q.opt.Signer, k, "b"), signedEnv(q.opt.Signer, k, "c")
		for _, e := range []*Envelope{a, b, cc} {
			mustEnqueue(t, q, e)
		}
		if id := <-started; id != a.RunID {
			t.Fatalf("started %s", id)
		}
		res, err := q.Cancel(ctx, k, b.RunID)
		if err != nil || res.Active != "" || fmt.Sprint(res.Removed) != fmt.Sprint([]string{b.RunID}) {
			t.Fatalf("Cancel(b) = %+v, %v; want b removed", res, err)
		}
		res, err = q.Cancel(ctx, k, "")
		if err != nil || res.Active != a.RunID || fmt.Sprint(res.Removed) != fmt.Sprint([]string{cc.RunID}) {
			t.Fatalf("Cancel(conversation) = %+v, %v; want a cancelled and c removed", res, err)
		}
		eventually(t, 5*time.Second, "three cancelled runs", func() bool { return stats(t, q).Cancelled == 3 })
		if rec.total() != 1 {
			t.Errorf("%d runs started, want only a", rec.total())
		}
		if _, err := q.Cancel(ctx, k, NewRunID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("Cancel of an unknown run = %v, want ErrNotFound", err)
		}
		if d, _ := q.Depth(ctx); d.Pending != 0 {
			t.Errorf("pending after cancelling everything = %d", d.Pending)
		}
	})

	t.Run("cancel the runs of matching conversations", func(t *testing.T) {
		q := newQueue(t, c)
		started := make(chan string, 10)
		var stopped sync.Map // run id → struct{}: its context ended
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			started <- run.Envelope.RunID
			<-ctx.Done()
			stopped.Store(run.Envelope.RunID, struct{}{})
			return "", ctx.Err()
		}), nil)
		inA := func(k conv.Key) bool {
			return k.Platform == "slack" && (k.Workspace == "TA" || strings.HasSuffix(k.Workspace, "/TA"))
		}
		a1 := conv.Key{Platform: "slack", Workspace: "TA", Chat: "D1"}
		a2 := conv.Key{Platform: "slack", Workspace: "E1/TA", Chat: "C2", Thread: "1.2"}
		b := conv.Key{Platform: "slack", Workspace: "TB", Chat: "D1"}
		other := conv.Key{Platform: "discord", Workspace: "TA", Chat: "D1"}
		envs := map[conv.Key][]*Envelope{}
		for _, k := range []conv.Key{a1, a1, a2, b, b, other} {
			e := signedEnv(q.opt.Signer, k, "m")
			envs[k] = append(envs[k], e)
			mustEnqueue(t, q, e)
		}
		for range 4 { // the head of each conversation
			<-started
		}
		done, err := q.CancelWhere(ctx, inA)
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != 2 || done[a1].Active != envs[a1][0].RunID || fmt.Sprint(done[a1].Removed) != fmt.Sprint([]string{envs[a1][1].RunID}) ||
			done[a2].Active != envs[a2][0].RunID || len(done[a2].Removed) != 0 {
			t.Fatalf("CancelWhere = %+v; want a1's active cancelled and its queued run removed, a2's active cancelled", done)
		}
		eventually(t, 5*time.Second, "A's two active runs stopped", func() bool {
			_, s1 := stopped.Load(envs[a1][0].RunID)
			_, s2 := stopped.Load(envs[a2][0].RunID)
			return s1 && s2
		})
		eventually(t, 5*time.Second, "three cancelled runs", func() bool { return stats(t, q).Cancelled == 3 })
		d, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left := map[conv.Key]int64{}
		for _, cd := range d.Conversations {
			left[cd.Conv] = cd.Queued
		}
		if len(left) != 2 || left[b] != 2 || left[other] != 1 || d.Pending != 3 {
			t.Errorf("left after CancelWhere: %+v (pending %d); want b's two runs and the other platform's one", left, d.Pending)
		}
		for _, k := range []conv.Key{b, other} {
			if _, s := stopped.Load(envs[k][0].RunID); s {
				t.Errorf("the active run of %s was stopped", k)
			}
		}
		if done, err := q.CancelWhere(ctx, inA); err != nil || len(done) != 0 {
			t.Errorf("CancelWhere again = %+v, %v; want nothing left to cancel", done, err)
		}
	})

	t.Run("pause and resume intake", func(t *testing.T) {
		q := newQueue(t, c)
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(1), "before"))
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if p, err := q.Paused(ctx); err != nil || !p {
			t.Fatalf("Paused = %v, %v", p, err)
		}
		for _, k := range []conv.Key{testConv(1), testConv(2)} { // a scheduled and an idle conversation
			if err := q.Enqueue(ctx, signedEnv(q.opt.Signer, k, "during")); !errors.Is(err, ErrPaused) {
				t.Errorf("Enqueue while paused into %s = %v, want ErrPaused", k.Chat, err)
			}
		}
		if d, _ := q.Depth(ctx); d.Pending != 1 || len(d.Conversations) != 1 || d.Conversations[0].Queued != 1 {
			t.Errorf("depth after refused enqueues = %+v, want only the first run", d)
		}
		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(2), "after"))
		if p, _ := q.Paused(ctx); p {
			t.Error("still paused after Resume")
		}
	})
}

// TestRecentThroughput proves finished runs show in Queue.Recent by outcome, over all processes'
// settles, on real Redis and on the embedded miniredis.
func TestRecentThroughput(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testRecentThroughput(t, realRedis(t)) })
	t.Run("embedded miniredis", func(t *testing.T) { testRecentThroughput(t, embedded(t)) })
}

func testRecentThroughput(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	q := newQueue(t, c, func(o *Options) { o.MaxAttempts = 2 })
	if r, err := q.Recent(ctx); err != nil || r != (Recent{}) {
		t.Fatalf("Recent of a new queue = %+v, %v; want nothing", r, err)
	}
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		switch run.Envelope.Text {
		case "ok":
			return OutcomeAnswered, nil
		case "ask":
			return OutcomeWaiting, nil
		case "bad":
			return "", Permanent(errors.New("refused by the model"))
		}
		return "", errors.New("model timed out")
	}), nil)
	for i, text := range []string{"ok", "ok", "ok", "ask", "bad", "bad", "flaky"} {
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(i), text))
	}
	want := Throughput{Answered: 3, Waiting: 1, Failed: 2, Retries: 1, DeadLettered: 1}
	var r Recent
	eventually(t, 10*time.Second, "the runs in the last hour", func() bool {
		var err error
		r, err = q.Recent(ctx)
		return err == nil && r.LastHour == want
	})
	// The runs finished moments ago: the last minute holds them unless a minute began since and
	// prorates the previous one, which can only round some of them away.
	m, h := r.LastMinute, r.LastHour
	if m.Answered < 2 || m.Answered > h.Answered || m.Waiting > h.Waiting || m.Failed > h.Failed ||
		m.Retries > h.Retries || m.DeadLettered > h.DeadLettered || m.Cancelled != 0 {
		t.Errorf("last minute = %+v, want about the last hour's %+v", m, h)
	}
}

// TestRecentWindows proves the queue reads the last minute and the last hour from the buckets.
func TestRecentWindows(t *testing.T) {
	const m = int64(29_000_000)
	r := rdb.Recent{Now: m*60_000 + 30_000, Minutes: map[int64]map[string]int64{
		m:      {"answered": 4, "failed": 1, "cancelled": 2, "waiting": 1, "retries": 3, "dead_lettered": 1, "leases_lost": 9},
		m - 1:  {"answered": 10},
		m - 30: {"answered": 100, "failed": 5},
		m - 60: {"answered": 60},
		m - 61: {"answered": 1000},
	}}
	got := recentOf(r)
	want := Recent{
		LastMinute: Throughput{Answered: 4 + 5, Waiting: 1, Cancelled: 2, Failed: 1, Retries: 3, DeadLettered: 1},
		LastHour:   Throughput{Answered: 4 + 10 + 100 + 30, Waiting: 1, Cancelled: 2, Failed: 1 + 5, Retries: 3, DeadLettered: 1},
	}
	if got != want {
		t.Errorf("recentOf = %+v, want %+v", got, want)
	}
}
