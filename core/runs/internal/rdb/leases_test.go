package rdb

import (
	"testing"
	"time"
)

func TestScriptClaimAndAck(t *testing.T) {
	s := newStore(t)
	if c, _ := s.Leases().Claim(ctx, tag, "w1", ms(0), ms(time.Minute)); c.Status != ClaimEmpty {
		t.Fatalf("claim of nothing = %+v", c)
	}
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false)
	c, err := s.Leases().Claim(ctx, tag, "w1", ms(0), ms(time.Minute))
	if err != nil || c.Status != ClaimRun || c.Entry != Entry("a", []byte("env-a")) || c.Attempt != 1 || c.Cancelled {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if c, _ := s.Leases().Claim(ctx, tag, "w2", ms(0), ms(time.Minute)); c.Status != ClaimHeld {
		t.Fatalf("claim of a live lease = %+v, want held", c)
	}
	if c, _ := s.Leases().Ack(ctx, tag, "w2", "a", ms(time.Minute)); c.Status != ClaimLost {
		t.Fatalf("ack by a non-owner = %+v, want lost", c)
	}
	// The lease expires: w2 takes over, the attempt counts on.
	if err := s.Client().HSet(ctx, s.stKey(tag), "d", ms(-time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Leases().Claim(ctx, tag, "w2", ms(0), ms(time.Minute))
	if c.Status != ClaimRun || c.Attempt != 2 {
		t.Fatalf("takeover = %+v, want run at attempt 2", c)
	}
	if c, _ := s.Leases().Ack(ctx, tag, "w1", "a", ms(time.Minute)); c.Status != ClaimLost {
		t.Fatalf("ack by the old owner = %+v, want lost", c)
	}
	c, _ = s.Leases().Ack(ctx, tag, "w2", "a", ms(time.Minute))
	if c.Status != ClaimNext || c.Entry != Entry("b", []byte("env-b")) || c.Attempt != 1 {
		t.Fatalf("ack = %+v, want next b", c)
	}
	if c, _ := s.Leases().Ack(ctx, tag, "w2", "b", ms(time.Minute)); c.Status != ClaimIdle {
		t.Fatalf("last ack = %+v, want idle", c)
	}
	if n, _ := s.Client().Exists(ctx, s.stKey(tag), s.qKey(tag)).Result(); n != 0 {
		t.Errorf("%d keys left for an idle conversation", n)
	}
}

func TestScriptRenew(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	_, _ = s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Second))
	r, err := s.Leases().RenewMany(ctx, []RenewReq{
		{Tag: tag, Owner: "w", RunID: "a", Deadline: ms(time.Minute), Bump: true},
		{Tag: tag, Owner: "other", RunID: "a", Deadline: ms(time.Minute)},
		{Tag: tag, Owner: "w", RunID: "zzz", Deadline: ms(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Lost || r[0].Attempt != 2 || !r[1].Lost || !r[2].Lost {
		t.Errorf("renewals = %+v, want [attempt 2, lost, lost]", r)
	}
	if _, err := s.Client().ScriptFlush(ctx).Result(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Leases().Renew(ctx, RenewReq{Tag: tag, Owner: "w", RunID: "a", Deadline: ms(time.Minute)}); err != nil || r.Lost || r.Attempt != 2 {
		t.Errorf("renew after SCRIPT FLUSH = %+v, %v", r, err)
	}
}

func TestScriptRelease(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	_, _ = s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	if need, _ := s.Leases().Release(ctx, tag, "other", ms(0)); need {
		t.Error("a non-owner released the lease")
	}
	if need, err := s.Leases().Release(ctx, tag, "w", ms(0)); err != nil || !need {
		t.Fatalf("Release = %v, %v; want a hint needed", need, err)
	}
	c, _ := s.Leases().Claim(ctx, tag, "w2", ms(0), ms(time.Minute))
	if c.Status != ClaimRun || c.Attempt != 2 {
		t.Errorf("claim after release = %+v, want at once, attempt 2", c)
	}
}

// TestScriptReleaseCountsHandBacks: a release counts the active run's attempt as handed back,
// the next claim reports it with the attempt count, and a new active run starts with none.
func TestScriptReleaseCountsHandBacks(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false)
	for i := 1; i <= 2; i++ {
		c, err := s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
		if err != nil || c.Attempt != i || c.HandedBack != i-1 {
			t.Fatalf("claim %d = %+v, %v; want attempt %d with %d handed back", i, c, err, i, i-1)
		}
		if again, err := s.Leases().Release(ctx, tag, "w", ms(0)); err != nil || !again {
			t.Fatalf("release = %v, %v", again, err)
		}
	}
	c, _ := s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	next, err := s.Leases().Ack(ctx, tag, "w", "a", ms(time.Minute))
	if err != nil || next.Status != ClaimNext || next.HandedBack != 0 || c.HandedBack != 2 {
		t.Errorf("claim after two releases = %+v, then ack = %+v, %v; want 2 handed back, then the next run with none", c, next, err)
	}
}
