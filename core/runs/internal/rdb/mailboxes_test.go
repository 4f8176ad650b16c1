package rdb

import (
	"fmt"
	"testing"
	"time"
)

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
	if c, _ := s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute)); c.Status != ClaimRun {
		t.Fatal(c)
	}
	r := mustEnqueue(t, s, false, "c", 2, true)
	if r.Status != StatusQueued || r.Interrupted != "a" || fmt.Sprint(r.Removed) != "[b]" || ids(t, s) != "[a c]" {
		t.Fatalf("interrupt: %+v %s", r, ids(t, s))
	}
	if rn, _ := s.Leases().Renew(ctx, RenewReq{Tag: tag, Owner: "w", RunID: "a", Deadline: ms(time.Minute)}); !rn.Cancelled {
		t.Error("the interrupted run is not flagged cancelled")
	}
}

func TestScriptRetract(t *testing.T) {
	s := newStore(t)
	mustEnqueue(t, s, true, "a", 0, false)
	if need, err := s.Mailboxes().Retract(ctx, tag, Entry("a", []byte("env-a")), ""); err != nil || need {
		t.Fatalf("Retract = %v, %v", need, err)
	}
	if _, ok, _ := s.Mailboxes().ConvState(ctx, tag); ok {
		t.Error("state left after retracting the only entry")
	}
	mustEnqueue(t, s, true, "a", 0, false)
	mustEnqueue(t, s, false, "b", 0, false) // queued behind the invisible entry meanwhile
	if need, _ := s.Mailboxes().Retract(ctx, tag, Entry("a", []byte("env-a")), ""); !need || ids(t, s) != "[b]" {
		t.Errorf("Retract with another entry behind = %v %s, want a hint needed for [b]", need, ids(t, s))
	}
}

func TestScriptCancel(t *testing.T) {
	s := newStore(t)
	for i, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, i == 0, id, 0, false)
	}
	_, _ = s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute))
	active, removed, err := s.Mailboxes().Cancel(ctx, tag, "b")
	if err != nil || active != "" || fmt.Sprint(removed) != "[b]" {
		t.Fatalf("cancel b = %q %v %v", active, removed, err)
	}
	active, removed, _ = s.Mailboxes().Cancel(ctx, tag, "")
	if active != "a" || fmt.Sprint(removed) != "[c]" || ids(t, s) != "[a]" {
		t.Fatalf("cancel all = %q %v %s", active, removed, ids(t, s))
	}
	if active, removed, _ := s.Mailboxes().Cancel(ctx, "{conv:none}", ""); active != "" || len(removed) != 0 {
		t.Errorf("cancel in an idle conversation = %q %v", active, removed)
	}
}

// TestScriptEnqueueAppend: append mode pushes only behind a scheduled conversation's work.
func TestScriptEnqueueAppend(t *testing.T) {
	s := newStore(t)
	append := func(id string) EnqueueResult {
		t.Helper()
		r, err := s.Mailboxes().Enqueue(ctx, EnqueueReq{Tag: tag, Append: true, Entry: Entry(id, []byte("env-"+id)), Now: ms(0), ConvKey: "k"})
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
