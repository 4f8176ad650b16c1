package runs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRetryThenDeadLetter(t *testing.T) { testRetryThenDeadLetter(t, realRedis(t)) }

func testRetryThenDeadLetter(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	t.Run("transient errors are retried then dead-lettered", func(t *testing.T) {
		var retries atomic.Int32
		q := newQueue(t, c, func(o *Options) {
			o.MaxAttempts = 3
			o.OnRecovery = func(kind Recovery, n int) {
				if kind == RecoveryRetry {
					retries.Add(int32(n))
				}
			}
		})
		rec := newRecorder()
		var calls atomic.Int32
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			if got, want := run.Envelope.Attempt, int(calls.Add(1)); got != want {
				t.Errorf("attempt = %d on call %d", got, want)
			}
			return "", errors.New("model timed out")
		}), rec)
		env := signedEnv(q.opt.Signer, testConv(1), "doomed")
		mustEnqueue(t, q, env)
		var dls []DeadLetter
		eventually(t, 5*time.Second, "the dead letter", func() bool {
			dls, _ = q.DeadLetters(ctx, 10)
			return len(dls) == 1
		})
		if calls.Load() != 3 {
			t.Errorf("handler called %d times, want MaxAttempts = 3", calls.Load())
		}
		d := dls[0]
		if d.RunID != env.RunID || d.Attempts != 3 || !strings.Contains(d.Reason, "attempts exhausted: model timed out") || d.Conv != env.Conv || d.Envelope == nil {
			t.Errorf("dead letter = %+v", d)
		}
		eventually(t, 5*time.Second, "counters", func() bool {
			s := stats(t, q)
			return s.Retries == 2 && s.DeadLettered == 1
		})
		if n := retries.Load(); n != 2 {
			t.Errorf("OnRecovery was told of %d retries, want 2", n)
		}
		// The user is told after the dead letter is recorded.
		eventually(t, 5*time.Second, "the failed event", func() bool { return len(rec.eventsOf(env.RunID)) > 0 })
		if evs := rec.eventsOf(env.RunID); len(evs) != 1 || evs[0].Kind != EventFailed || evs[0].Reason == "" {
			t.Errorf("events = %+v, want one failed event telling the user", evs)
		}
		if d, _ := q.Depth(ctx); d.Pending != 0 || len(d.Conversations) != 0 {
			t.Errorf("depth = %+v, want nothing pending", d)
		}
	})
	t.Run("a transient error then success answers", func(t *testing.T) {
		q := newQueue(t, c)
		var calls atomic.Int32
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			if calls.Add(1) == 1 {
				return "", errors.New("flaky")
			}
			return OutcomeAnswered, nil
		}), nil)
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(2), "flaky"))
		eventually(t, 5*time.Second, "the answer", func() bool { s := stats(t, q); return s.Answered == 1 && s.Retries == 1 })
	})
	t.Run("a permanent error fails at once", func(t *testing.T) {
		q := newQueue(t, c)
		var calls atomic.Int32
		startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
			calls.Add(1)
			return "", Permanent(errors.New("bad request"))
		}), nil)
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(3), "bad"))
		eventually(t, 5*time.Second, "the failure", func() bool { return stats(t, q).Failed == 1 })
		if calls.Load() != 1 {
			t.Errorf("handler called %d times, want 1", calls.Load())
		}
		if dls, _ := q.DeadLetters(ctx, 10); len(dls) != 0 {
			t.Errorf("dead letters = %+v, want none", dls)
		}
	})
}

func TestForgedTamperedUnsignedDeadLettered(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, realRedis(t))
	other := testSigner(t, []byte("an-attackers-key-0123456789abcdef"))
	k := testConv(7)
	unsigned := newEnv(k, "unsigned")
	forged := signedEnv(other, k, "forged with another key")
	tampered := signedEnv(q.opt.Signer, k, "transfer 10")
	tampered.Text = "transfer 10000"
	adminForged := signedEnv(q.opt.Signer, k, "make me admin")
	adminForged.Identity.Admin = true
	badMAC := signedEnv(q.opt.Signer, k, "bad mac")
	badMAC.Sig.MAC = badMAC.Sig.MAC[:10]
	good := signedEnv(q.opt.Signer, k, "good")
	cases := []struct {
		env    *Envelope
		reason string
	}{
		{unsigned, "signature: unsigned"},
		{forged, "signature: unknown_key"},
		{tampered, "signature: bad_signature"},
		{adminForged, "signature: bad_signature"},
		{badMAC, "signature: malformed"},
	}
	for _, c := range cases {
		mustEnqueue(t, q, c.env)
	}
	mustEnqueue(t, q, good)
	rec := newRecorder()
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 5*time.Second, "the good run behind the bad ones", func() bool { return rec.count(good.RunID) == 1 })
	if rec.total() != 1 {
		t.Errorf("handler ran %d envelopes, want only the good one", rec.total())
	}
	dls, err := q.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string]DeadLetter{}
	for _, d := range dls {
		byRun[d.RunID] = d
	}
	for _, c := range cases {
		t.Run(c.env.Text, func(t *testing.T) {
			d, ok := byRun[c.env.RunID]
			if !ok {
				t.Fatalf("no dead letter for %s", c.env.Text)
			}
			if d.Reason != c.reason {
				t.Errorf("reason = %q, want %q", d.Reason, c.reason)
			}
		})
	}
	eventually(t, 5*time.Second, "the counters", func() bool {
		s := stats(t, q)
		return s.SignatureFailures == int64(len(cases)) && s.DeadLettered == int64(len(cases)) && s.Answered == 1
	})
}

func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	c := realRedis(t)
	oldKey, newKey := []byte("old-key-0123456789abcdef"), []byte("new-key-0123456789abcdef")
	oldRing := testSigner(t, oldKey)
	rotated := testSigner(t, newKey, oldKey)
	retired := testSigner(t, newKey)

	t.Run("newest signs, every key verifies", func(t *testing.T) {
		e := newEnv(testConv(1), "x")
		rotated.Sign(e)
		if e.Sig.KeyID != KeyID(newKey) {
			t.Errorf("signed with %s, want the newest key %s", e.Sig.KeyID, KeyID(newKey))
		}
		if err := oldRing.Verify(e); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("old ring verifying a new-key envelope = %v, want ErrUnknownKey", err)
		}
		o := newEnv(testConv(1), "y")
		oldRing.Sign(o)
		if err := rotated.Verify(o); err != nil {
			t.Errorf("rotated ring rejects an old-key envelope: %v", err)
		}
	})
	t.Run("queued runs signed before a rotation still run; after retirement they are dead-lettered", func(t *testing.T) {
		q := newQueue(t, c, func(o *Options) { o.Signer = rotated })
		before := signedEnv(oldRing, testConv(2), "signed before the rotation")
		after := signedEnv(rotated, testConv(3), "signed after")
		mustEnqueue(t, q, before)
		mustEnqueue(t, q, after)
		rec := newRecorder()
		h := HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) { rec.handled(run); return OutcomeAnswered, nil })
		p := startPool(t, q, h, nil)
		eventually(t, 5*time.Second, "both runs", func() bool { return rec.count(before.RunID) == 1 && rec.count(after.RunID) == 1 })
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		q2 := newQueue(t, c, func(o *Options) { o.Signer = retired; o.Prefix = q.opt.Prefix })
		stale := signedEnv(oldRing, testConv(4), "signed with the retired key")
		mustEnqueue(t, q2, stale)
		startPool(t, q2, h, nil)
		eventually(t, 5*time.Second, "the dead letter", func() bool {
			d, _ := q2.DeadLetters(ctx, 10)
			return len(d) == 1 && d[0].RunID == stale.RunID && d[0].Reason == "signature: unknown_key"
		})
		if rec.count(stale.RunID) != 0 {
			t.Error("an envelope signed with a retired key ran")
		}
	})
}

// TestOutageBackoffWaitsMinutes pins the slow schedule of runs failing on an outage: 5 s, 20 s,
// 1 min, 2 min, then doubling up to 30 min, each within its jitter (its last quarter).
func TestOutageBackoffWaitsMinutes(t *testing.T) {
	p := &processor{opt: Options{OutageRetryBase: 5 * time.Second}}
	want := []time.Duration{5 * time.Second, 20 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}
	for i, w := range want {
		for range 50 {
			if got := p.unavailableBackoff(i + 1); got < w-w/4 || got > w {
				t.Fatalf("wait after attempt %d = %v, want within [%v, %v]", i+1, got, w-w/4, w)
			}
		}
	}
	if got := p.unavailableBackoff(40); got > maxUnavailableWait || got < maxUnavailableWait-maxUnavailableWait/4 {
		t.Errorf("wait after attempt 40 = %v, want capped at %v", got, maxUnavailableWait)
	}
}
