package rdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore returns a store on the test Redis under a fresh prefix, deleted afterwards.
func newStore(t *testing.T) *Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
		_ = c.Close()
	})
	return New(c, prefix)
}

const tag = "{conv:0123456789abcdef0123456789abcdef}"

var ctx = context.Background()

func ms(d time.Duration) int64 { return time.Now().Add(d).UnixMilli() }

func mustEnqueue(t *testing.T, s *Store, probe bool, id string, max int, interrupt bool) EnqueueResult {
	t.Helper()
	r, err := s.Enqueue(ctx, EnqueueReq{Tag: tag, Probe: probe, Entry: Entry(id, []byte("env-"+id)), MaxPerConv: max, Interrupt: interrupt, Now: ms(0), ConvKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ids(t *testing.T, s *Store) string {
	t.Helper()
	got, err := s.MailboxIDs(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(got)
}

func TestScriptEnqueue(t *testing.T) {
	s := newStore(t)
	if r := mustEnqueue(t, s, true, "a", 2, false); r.Status != StatusNew {
		t.Fatalf("idle conversation: %+v, want new", r)
	}
	if r := mustEnqueue(t, s, true, "b", 2, false); r.Status != StatusScheduled || ids(t, s) != "[a]" {
		t.Fatalf("probe of a scheduled conversation: %+v %s, want scheduled without a push", r, ids(t, s))
	}
	if r := mustEnqueue(t, s, false, "b", 2, false); r.Status != StatusQueued || ids(t, s) != "[a b]" {
		t.Fatalf("push: %+v %s", r, ids(t, s))
	}
	if r := mustEnqueue(t, s, false, "c", 2, false); r.Status != StatusBusy || ids(t, s) != "[a b]" {
		t.Fatalf("over the limit: %+v %s, want busy and nothing pushed", r, ids(t, s))
	}
	// Interrupt: a is active; b is dropped, a flagged, c appended.
	if c, _ := s.Claim(ctx, tag, "w", ms(0), ms(time.Minute)); c.Status != ClaimRun {
		t.Fatal(c)
	}
	r := mustEnqueue(t, s, false, "c", 2, true)
	if r.Status != StatusQueued || r.Interrupted != "a" || fmt.Sprint(r.Removed) != "[b]" || ids(t, s) != "[a c]" {
		t.Fatalf("interrupt: %+v %s", r, ids(t, s))
	}
	if rn, _ := s.Renew(ctx, RenewReq{Tag: tag, Owner: "w", RunID: "a", Deadline: ms(time.Minute)}); !rn.Cancelled {
		t.Error("the interrupted run is not flagged cancelled")
	}
}

func TestScriptRetract(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	if need, err := s.Retract(ctx, tag, Entry("a", []byte("env-a")), ""); err != nil || need {
		t.Fatalf("Retract = %v, %v", need, err)
	}
	if _, ok, _ := s.ConvState(ctx, tag); ok {
		t.Error("state left after retracting the only entry")
	}
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false) // queued behind the invisible entry meanwhile
	if need, _ := s.Retract(ctx, tag, Entry("a", []byte("env-a")), ""); !need || ids(t, s) != "[b]" {
		t.Errorf("Retract with another entry behind = %v %s, want a hint needed for [b]", need, ids(t, s))
	}
}

func TestScriptClaimAndAck(t *testing.T) {
	s := newStore(t)
	if c, _ := s.Claim(ctx, tag, "w1", ms(0), ms(time.Minute)); c.Status != ClaimEmpty {
		t.Fatalf("claim of nothing = %+v", c)
	}
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false)
	c, err := s.Claim(ctx, tag, "w1", ms(0), ms(time.Minute))
	if err != nil || c.Status != ClaimRun || c.Entry != Entry("a", []byte("env-a")) || c.Attempt != 1 || c.Cancelled {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if c, _ := s.Claim(ctx, tag, "w2", ms(0), ms(time.Minute)); c.Status != ClaimHeld {
		t.Fatalf("claim of a live lease = %+v, want held", c)
	}
	if c, _ := s.Ack(ctx, tag, "w2", "a", ms(time.Minute)); c.Status != ClaimLost {
		t.Fatalf("ack by a non-owner = %+v, want lost", c)
	}
	// The lease expires: w2 takes over, the attempt counts on.
	if err := s.Client().HSet(ctx, s.stKey(tag), "d", ms(-time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Claim(ctx, tag, "w2", ms(0), ms(time.Minute))
	if c.Status != ClaimRun || c.Attempt != 2 {
		t.Fatalf("takeover = %+v, want run at attempt 2", c)
	}
	if c, _ := s.Ack(ctx, tag, "w1", "a", ms(time.Minute)); c.Status != ClaimLost {
		t.Fatalf("ack by the old owner = %+v, want lost", c)
	}
	c, _ = s.Ack(ctx, tag, "w2", "a", ms(time.Minute))
	if c.Status != ClaimNext || c.Entry != Entry("b", []byte("env-b")) || c.Attempt != 1 {
		t.Fatalf("ack = %+v, want next b", c)
	}
	if c, _ := s.Ack(ctx, tag, "w2", "b", ms(time.Minute)); c.Status != ClaimIdle {
		t.Fatalf("last ack = %+v, want idle", c)
	}
	if n, _ := s.Client().Exists(ctx, s.stKey(tag), s.qKey(tag)).Result(); n != 0 {
		t.Errorf("%d keys left for an idle conversation", n)
	}
}

func TestScriptRenew(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	_, _ = s.Claim(ctx, tag, "w", ms(0), ms(time.Second))
	r, err := s.RenewMany(ctx, []RenewReq{
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
	if r, err := s.Renew(ctx, RenewReq{Tag: tag, Owner: "w", RunID: "a", Deadline: ms(time.Minute)}); err != nil || r.Lost || r.Attempt != 2 {
		t.Errorf("renew after SCRIPT FLUSH = %+v, %v", r, err)
	}
}

func TestScriptRelease(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	_, _ = s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	if need, _ := s.Release(ctx, tag, "other", ms(0)); need {
		t.Error("a non-owner released the lease")
	}
	if need, err := s.Release(ctx, tag, "w", ms(0)); err != nil || !need {
		t.Fatalf("Release = %v, %v; want a hint needed", need, err)
	}
	c, _ := s.Claim(ctx, tag, "w2", ms(0), ms(time.Minute))
	if c.Status != ClaimRun || c.Attempt != 2 {
		t.Errorf("claim after release = %+v, want at once, attempt 2", c)
	}
}

func TestScriptCancel(t *testing.T) {
	s := newStore(t)
	for i, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, i == 0, id, 0, false)
	}
	_, _ = s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	active, removed, err := s.Cancel(ctx, tag, "b")
	if err != nil || active != "" || fmt.Sprint(removed) != "[b]" {
		t.Fatalf("cancel b = %q %v %v", active, removed, err)
	}
	active, removed, _ = s.Cancel(ctx, tag, "")
	if active != "a" || fmt.Sprint(removed) != "[c]" || ids(t, s) != "[a]" {
		t.Fatalf("cancel all = %q %v %s", active, removed, ids(t, s))
	}
	if active, removed, _ := s.Cancel(ctx, "{conv:none}", ""); active != "" || len(removed) != 0 {
		t.Errorf("cancel in an idle conversation = %q %v", active, removed)
	}
}

// TestScriptRescueStale: the backstop scan re-arms a conversation whose hint was asked for long
// ago and never claimed; it leaves alone a fresh one, one a worker holds (running, waiting on a
// platform, or waiting out a retry) and one whose hint is still queued (waiting).
func TestScriptRescueStale(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false) // enqueued, never hinted
	rescue := func(tg string, staleBefore int64, queued bool) (string, string) {
		t.Helper()
		st, head, err := s.RescueStale(ctx, tg, ms(0), staleBefore, queued)
		if err != nil {
			t.Fatal(err)
		}
		return st, head
	}
	if st, _ := rescue(tag, ms(-time.Minute), false); st != RescueNone {
		t.Errorf("rescue of a fresh conversation = %q, want none", st)
	}
	// Stale by the clock, but its hint is in the stream: it waits for a worker.
	if st, _ := rescue(tag, ms(time.Minute), true); st != RescueWaiting {
		t.Errorf("rescue of one whose hint is queued = %q, want waiting", st)
	}
	if st, head := rescue(tag, ms(time.Minute), false); st != RescueAgain || head != "a" {
		t.Errorf("rescue of a stale one = %q, %q; want again with its head a", st, head)
	}
	_, _ = s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	// A held conversation is never rescued, however old its request for a hint.
	if err := s.Client().HSet(ctx, s.stKey(tag), "hs", ms(-time.Hour)).Err(); err != nil {
		t.Fatal(err)
	}
	if st, _ := rescue(tag, ms(time.Hour), false); st != RescueNone {
		t.Errorf("rescue of a claimed conversation = %q, want none", st)
	}
	// A state left without a mailbox is hinted all the same, so that a claim drops it.
	other := "{conv:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee}"
	if err := s.Client().HSet(ctx, s.stKey(other), "k", "k", "hs", ms(-time.Hour)).Err(); err != nil {
		t.Fatal(err)
	}
	if st, head := rescue(other, ms(-time.Minute), false); st != RescueAgain || head != "" {
		t.Errorf("rescue of an empty stale one = %q, %q; want again without a head", st, head)
	}
}

// TestQueuedHints: the tags of every hint in the ready stream, read or not, over several pages;
// none once they are spent.
func TestQueuedHints(t *testing.T) {
	s := newStore(t)
	if tags, err := s.QueuedHints(ctx); err != nil || len(tags) != 0 {
		t.Fatalf("QueuedHints of an empty stream = %v, %v; want none", tags, err)
	}
	if err := s.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	const n = hintsPage + 5
	var hints []string
	for i := range n {
		if _, _, err := s.Ready(ctx, ReadyReq{Hint: fmt.Sprintf("{conv:%032x}", i)}); err != nil {
			t.Fatal(err)
		}
	}
	read, err := s.ReadHints(ctx, "w", 3, 0) // read, not spent: still queued
	if err != nil || len(read) != 3 {
		t.Fatalf("ReadHints = %v, %v", read, err)
	}
	tags, err := s.QueuedHints(ctx)
	if err != nil || len(tags) != n {
		t.Fatalf("QueuedHints = %d tags, %v; want %d", len(tags), err, n)
	}
	for _, h := range read {
		hints = append(hints, h.ID)
		if _, ok := tags[h.Tag]; !ok {
			t.Errorf("a hint read and not spent (%s) is missing", h.Tag)
		}
	}
	if err := s.Settle(ctx, Settlement{Acks: hints}); err != nil {
		t.Fatal(err)
	}
	if tags, err := s.QueuedHints(ctx); err != nil || len(tags) != n-len(read) {
		t.Errorf("after spending %d: %d tags, %v; want %d", len(read), len(tags), err, n-len(read))
	}
}

// TestScriptRescue: the rescue of a run found in the unhinted index asks for a hint only while
// nobody holds the conversation and its mailbox holds work, and says whether the run is there.
func TestScriptRescue(t *testing.T) {
	s := newStore(t)
	rescue := func(id string) (string, bool) {
		t.Helper()
		st, in, err := s.Rescue(ctx, tag, id, ms(0))
		if err != nil {
			t.Fatal(err)
		}
		return st, in
	}
	if st, _ := rescue("a"); st != RescueAbsent {
		t.Errorf("rescue in an idle conversation = %q, want absent", st)
	}
	mustEnqueue(t, s, true, "a", 0, false)
	if st, in := rescue("a"); st != RescueAgain || !in {
		t.Errorf("rescue of an unclaimed run = %q, %v; want again, in the mailbox", st, in)
	}
	if st, in := rescue("b"); st != RescueAgain || in {
		t.Errorf("rescue of a run gone from an unclaimed mailbox = %q, %v; want again (for the others), not in it", st, in)
	}
	_, _ = s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	if st, _ := rescue("a"); st != RescueHeld {
		t.Errorf("rescue in a held conversation = %q, want held", st)
	}
}

// TestUnhintedIndex: an Intent enqueue indexes the run before its push; Ready with Unindex takes
// it out as it hints, a refused admission leaves it; Unhinted reads entries by age.
func TestUnhintedIndex(t *testing.T) {
	s := newStore(t)
	at := ms(-time.Minute)
	r, err := s.Enqueue(ctx, EnqueueReq{Tag: tag, Probe: true, Intent: true, Entry: Entry("a", []byte("env-a")), Now: at, ConvKey: "k"})
	if err != nil || r.Status != StatusNew {
		t.Fatalf("indexed enqueue = %+v, %v", r, err)
	}
	got, err := s.Unhinted(ctx, ms(0), 10)
	if err != nil || len(got) != 1 || got[0].Member != Member(tag, "a") || got[0].At != at {
		t.Fatalf("Unhinted = %+v, %v; want a at %d", got, err, at)
	}
	if got, _ := s.Unhinted(ctx, at-1, 10); len(got) != 0 {
		t.Errorf("Unhinted before the entry = %+v, want none", got)
	}
	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, "a"), Hint: tag, Unindex: true}); err != nil || st != ReadyPaused {
		t.Fatalf("ready while paused = %q, %v", st, err)
	}
	if got, _ := s.Unhinted(ctx, ms(0), 10); len(got) != 1 {
		t.Errorf("a refused admission took the run out of the index: %+v", got)
	}
	// A run a rescue admitted already is never refused.
	if _, _, err := s.Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "a")}); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, "a"), Hint: tag, Unindex: true}); err != nil || st != ReadyOK {
		t.Fatalf("ready of an admitted run while paused = %q, %v; want ok", st, err)
	}
	if got, _ := s.Unhinted(ctx, ms(0), 10); len(got) != 0 {
		t.Errorf("the hint left the run in the index: %+v", got)
	}
	if n, _ := s.Client().XLen(ctx, s.ReadyKey()).Result(); n != 1 {
		t.Errorf("ready stream holds %d hints, want 1", n)
	}
	if err := s.Unindex(ctx, Member(tag, "gone")); err != nil {
		t.Error(err)
	}
}

// TestScriptEnqueueAppend: append mode pushes only behind a scheduled conversation's work.
func TestScriptEnqueueAppend(t *testing.T) {
	s := newStore(t)
	append := func(id string) EnqueueResult {
		t.Helper()
		r, err := s.Enqueue(ctx, EnqueueReq{Tag: tag, Append: true, Entry: Entry(id, []byte("env-"+id)), Now: ms(0), ConvKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := append("a"); r.Status != StatusIdle || ids(t, s) != "[]" {
		t.Fatalf("append to an idle conversation = %+v, mailbox %s; want idle, nothing pushed", r, ids(t, s))
	}
	mustEnqueue(t, s, true, "a", 0, false)
	if r := append("b"); r.Status != StatusQueued || ids(t, s) != "[a b]" {
		t.Fatalf("append to a scheduled conversation = %+v, mailbox %s", r, ids(t, s))
	}
}

func admit(t *testing.T, s *Store, runID string, max int64, hint string) (string, int64) {
	t.Helper()
	st, at, err := s.Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, runID), MaxPending: max, Hint: hint})
	if err != nil {
		t.Fatal(err)
	}
	return st, at
}

func pending(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := s.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestScriptReadyAndSettle(t *testing.T) {
	s := newStore(t)
	before := ms(0)
	st, at := admit(t, s, "a", 2, tag)
	if st != ReadyOK || at < before-time.Minute.Milliseconds() || at > ms(time.Minute) {
		t.Fatalf("Ready = %q at %d, want ok at about %d", st, at, before)
	}
	if st, _ := admit(t, s, "b", 2, ""); st != ReadyOK {
		t.Fatal(st)
	}
	if st, at := admit(t, s, "c", 2, ""); st != ReadyBusy || at != 0 {
		t.Fatalf("over the global limit = %q at %d", st, at)
	}
	if st, at, _ := s.Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "a")}); st != ReadyOK || at == 0 || pending(t, s) != 2 {
		t.Fatalf("forced admission of a counted run = %q at %d, pending %d; want ok and still 2", st, at, pending(t, s))
	}
	if st, _, _ := s.Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "r")}); st != ReadyOK || pending(t, s) != 3 {
		t.Fatalf("forced admission over the limit = %q, pending %d; want ok and 3", st, pending(t, s))
	}
	_ = s.Pause(ctx)
	if st, _ := admit(t, s, "d", 0, tag); st != ReadyPaused {
		t.Fatalf("paused = %q", st)
	}
	_ = s.Resume(ctx)
	if err := s.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureGroup(ctx); err != nil {
		t.Fatalf("EnsureGroup twice: %v", err)
	}
	hints, err := s.ReadHints(ctx, "c1", 10, 0)
	if err != nil || len(hints) != 1 || hints[0].Tag != tag {
		t.Fatalf("ReadHints = %+v, %v", hints, err)
	}
	done := []string{Member(tag, "a"), Member(tag, "b"), Member(tag, "r")}
	if err := s.Settle(ctx, Settlement{Done: done, Counters: map[string]int64{"answered": 2}, Hints: []string{"{conv:x}"}, Acks: []string{hints[0].ID}}); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, s); p != 0 {
		t.Errorf("pending = %d", p)
	}
	if st, _ := s.Stats(ctx); st["answered"] != 2 {
		t.Errorf("stats = %v", st)
	}
	if n, _ := s.Client().XLen(ctx, s.ReadyKey()).Result(); n != 1 {
		t.Errorf("ready stream holds %d entries, want only the new hint", n)
	}
	if err := s.Settle(ctx, Settlement{Done: done}); err != nil {
		t.Fatalf("settling finished runs twice: %v", err)
	}
	if p := pending(t, s); p != 0 {
		t.Errorf("pending after settling twice = %d", p)
	}
	// A batch larger than one HDEL call takes.
	var many []string
	for i := range 1234 {
		id := fmt.Sprint("m", i)
		admit(t, s, id, 0, "")
		many = append(many, Member(tag, id))
	}
	if err := s.Settle(ctx, Settlement{Done: many}); err != nil || pending(t, s) != 0 {
		t.Errorf("settling %d runs: %v, pending %d", len(many), err, pending(t, s))
	}
}

func TestHintsAutoClaimAndTouch(t *testing.T) {
	s := newStore(t)
	_ = s.EnsureGroup(ctx)
	_, _, _ = s.Ready(ctx, ReadyReq{Hint: tag})
	hints, _ := s.ReadHints(ctx, "dead", 1, 0)
	if len(hints) != 1 {
		t.Fatal(hints)
	}
	if got, _ := s.AutoClaim(ctx, "alive", time.Hour, 10); len(got) != 0 {
		t.Errorf("claimed a fresh hint: %v", got)
	}
	if got, err := s.AutoClaim(ctx, "alive", 0, 10); err != nil || len(got) != 1 || got[0].Tag != tag {
		t.Fatalf("AutoClaim = %v, %v", got, err)
	}
	if err := s.Touch(ctx, "alive", []string{hints[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadHints(ctx, "other", 1, 10*time.Millisecond); len(got) != 0 {
		t.Errorf("a delivered hint was read again: %v", got)
	}
}

func consumers(t *testing.T, s *Store) string {
	t.Helper()
	cs, err := s.Client().XInfoConsumers(ctx, s.ReadyKey(), s.group).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.Pending))
	}
	return fmt.Sprint(out)
}

// TestScriptPruneConsumers: consumers holding nothing and idle long enough are deleted, except
// the caller's own; a consumer holding a hint never is, however long it has been idle.
func TestScriptPruneConsumers(t *testing.T) {
	s := newStore(t)
	_ = s.EnsureGroup(ctx)
	read := func(consumer string) []Hint {
		t.Helper()
		if _, _, err := s.Ready(ctx, ReadyReq{Hint: tag}); err != nil {
			t.Fatal(err)
		}
		h, err := s.ReadHints(ctx, consumer, 1, 0)
		if err != nil || len(h) != 1 {
			t.Fatalf("%s read %v, %v", consumer, h, err)
		}
		return h
	}
	read("holder") // dies holding a hint
	for _, c := range []string{"dead1", "dead2", "dead3", "self"} {
		h := read(c)
		if err := s.Settle(ctx, Settlement{Acks: []string{h[0].ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := consumers(t, s); got != "[dead1:0 dead2:0 dead3:0 holder:1 self:0]" {
		t.Fatalf("consumers = %s", got)
	}
	if names, err := s.PruneConsumers(ctx, "self", time.Hour, 10); err != nil || len(names) != 0 {
		t.Errorf("PruneConsumers(idle an hour) = %v, %v; want none: all were active just now", names, err)
	}
	if names, err := s.PruneConsumers(ctx, "self", 0, 2); err != nil || fmt.Sprint(names) != "[dead1 dead2]" {
		t.Errorf("PruneConsumers(max 2) = %v, %v; want dead1 and dead2", names, err)
	}
	if names, err := s.PruneConsumers(ctx, "self", 0, 10); err != nil || fmt.Sprint(names) != "[dead3]" {
		t.Errorf("PruneConsumers = %v, %v; want dead3", names, err)
	}
	if got := consumers(t, s); got != "[holder:1 self:0]" {
		t.Errorf("consumers = %s, want the holder of a hint and the caller", got)
	}
	// Once the recoverer reclaimed its hint, the holder goes too.
	if h, err := s.AutoClaim(ctx, "self", 0, 10); err != nil || len(h) != 1 {
		t.Fatalf("AutoClaim = %v, %v", h, err)
	}
	if names, _ := s.PruneConsumers(ctx, "self", 0, 10); fmt.Sprint(names) != "[holder]" {
		t.Errorf("PruneConsumers after the reclaim = %v, want holder", names)
	}
	if got := consumers(t, s); got != "[self:1]" {
		t.Errorf("consumers = %s", got)
	}
}

func TestScriptDead(t *testing.T) {
	s := newStore(t)
	admit(t, s, "r1", 0, "")
	at := time.UnixMilli(time.Now().UnixMilli())
	d := DeadLetter{RunID: "r1", Reason: "signature: unsigned", Envelope: []byte("{}"), Conv: "k", Attempts: 1, At: at}
	id, err := s.AddDeadLetter(ctx, tag, d, true)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := s.DeadLetters(ctx, 10)
	d.ID = id
	if len(list) != 1 || fmt.Sprint(list[0]) != fmt.Sprint(d) {
		t.Fatalf("DeadLetters = %+v, want %+v", list, d)
	}
	if st, _ := s.Stats(ctx); st["dead_lettered"] != 1 || st["signature_failures"] != 1 {
		t.Errorf("stats = %v", st)
	}
	if p, _ := s.Pending(ctx); p != 0 {
		t.Errorf("pending = %d, want the dead run no longer pending", p)
	}
	if got, ok, _ := s.FindDeadLetter(ctx, "r1"); !ok || got.ID != id {
		t.Errorf("FindDeadLetter = %+v %v", got, ok)
	}
	if ok, _ := s.DeleteDeadLetter(ctx, id); !ok {
		t.Error("DeleteDeadLetter found nothing")
	}
	if _, ok, _ := s.FindDeadLetter(ctx, "r1"); ok {
		t.Error("deleted dead letter still found")
	}
}

// TestScriptReleaseCountsHandBacks: a release counts the active run's attempt as handed back,
// the next claim reports it with the attempt count, and a new active run starts with none.
func TestScriptReleaseCountsHandBacks(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false)
	for i := 1; i <= 2; i++ {
		c, err := s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
		if err != nil || c.Attempt != i || c.HandedBack != i-1 {
			t.Fatalf("claim %d = %+v, %v; want attempt %d with %d handed back", i, c, err, i, i-1)
		}
		if again, err := s.Release(ctx, tag, "w", ms(0)); err != nil || !again {
			t.Fatalf("release = %v, %v", again, err)
		}
	}
	c, _ := s.Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	next, err := s.Ack(ctx, tag, "w", "a", ms(time.Minute))
	if err != nil || next.Status != ClaimNext || next.HandedBack != 0 || c.HandedBack != 2 {
		t.Errorf("claim after two releases = %+v, then ack = %+v, %v; want 2 handed back, then the next run with none", c, next, err)
	}
}
