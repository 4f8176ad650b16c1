package rdb

import (
	"testing"
	"time"
)

// TestScriptRescueStale: the backstop scan re-arms a conversation whose hint was asked for long
// ago and never claimed; it leaves alone a fresh one, one a worker holds (running, waiting on a
// platform, or waiting out a retry) and one whose hint is still queued (waiting).
func TestScriptRescueStale(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false) // enqueued, never hinted
	rescue := func(tg string, staleBefore int64, queued bool) (string, string) {
		t.Helper()
		st, head, err := s.Rescues().RescueStale(ctx, tg, ms(0), staleBefore, queued)
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
	_, _ = s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
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

// TestScriptRescue: the rescue of a run found in the unhinted index asks for a hint only while
// nobody holds the conversation and its mailbox holds work, and says whether the run is there.
func TestScriptRescue(t *testing.T) {
	s := newStore(t)
	rescue := func(id string) (string, bool) {
		t.Helper()
		st, in, err := s.Rescues().Rescue(ctx, tag, id, ms(0))
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
	_, _ = s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	if st, _ := rescue("a"); st != RescueHeld {
		t.Errorf("rescue in a held conversation = %q, want held", st)
	}
}

// TestUnhintedIndex: an Intent enqueue indexes the run before its push; Ready with Unindex takes
// it out as it hints, a refused admission leaves it; Unhinted reads entries by age.
func TestUnhintedIndex(t *testing.T) {
	s := newStore(t)
	at := ms(-time.Minute)
	r, err := s.Mailboxes().Enqueue(ctx, EnqueueReq{Tag: tag, Probe: true, Intent: true, Entry: Entry("a", []byte("env-a")), Now: at, ConvKey: "k"})
	if err != nil || r.Status != StatusNew {
		t.Fatalf("indexed enqueue = %+v, %v", r, err)
	}
	got, err := s.Rescues().Unhinted(ctx, ms(0), 10)
	if err != nil || len(got) != 1 || got[0].Member != Member(tag, "a") || got[0].At != at {
		t.Fatalf("Unhinted = %+v, %v; want a at %d", got, err, at)
	}
	if got, _ := s.Rescues().Unhinted(ctx, at-1, 10); len(got) != 0 {
		t.Errorf("Unhinted before the entry = %+v, want none", got)
	}
	if err := s.Admissions().Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, "a"), Hint: tag, Unindex: true}); err != nil || st != ReadyPaused {
		t.Fatalf("ready while paused = %q, %v", st, err)
	}
	if got, _ := s.Rescues().Unhinted(ctx, ms(0), 10); len(got) != 1 {
		t.Errorf("a refused admission took the run out of the index: %+v", got)
	}
	// A run a rescue admitted already is never refused.
	if _, _, err := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "a")}); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, "a"), Hint: tag, Unindex: true}); err != nil || st != ReadyOK {
		t.Fatalf("ready of an admitted run while paused = %q, %v; want ok", st, err)
	}
	if got, _ := s.Rescues().Unhinted(ctx, ms(0), 10); len(got) != 0 {
		t.Errorf("the hint left the run in the index: %+v", got)
	}
	if n, _ := s.Client().XLen(ctx, s.Hints().ReadyKey()).Result(); n != 1 {
		t.Errorf("ready stream holds %d hints, want 1", n)
	}
	if err := s.Rescues().Unindex(ctx, Member(tag, "gone")); err != nil {
		t.Error(err)
	}
}
