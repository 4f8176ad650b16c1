package rdb

import (
	"fmt"
	"testing"
	"time"
)

// TestQueuedHints: the tags of every hint in the ready stream, read or not, over several pages;
// none once they are spent.
func TestQueuedHints(t *testing.T) {
	s := newStore(t)
	if tags, err := s.Hints().Queued(ctx); err != nil || len(tags) != 0 {
		t.Fatalf("Queued of an empty stream = %v, %v; want none", tags, err)
	}
	if err := s.Hints().EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	const n = hintsPage + 5
	var hints []string
	for i := range n {
		if _, _, err := s.Admissions().Ready(ctx, ReadyReq{Hint: fmt.Sprintf("{conv:%032x}", i)}); err != nil {
			t.Fatal(err)
		}
	}
	read, err := s.Hints().Read(ctx, "w", 3, 0) // read, not spent: still queued
	if err != nil || len(read) != 3 {
		t.Fatalf("Read = %v, %v", read, err)
	}
	tags, err := s.Hints().Queued(ctx)
	if err != nil || len(tags) != n {
		t.Fatalf("Queued = %d tags, %v; want %d", len(tags), err, n)
	}
	for _, h := range read {
		hints = append(hints, h.ID)
		if _, ok := tags[h.Tag]; !ok {
			t.Errorf("a hint read and not spent (%s) is missing", h.Tag)
		}
	}
	if err := s.Counters().Settle(ctx, Settlement{Acks: hints}); err != nil {
		t.Fatal(err)
	}
	if tags, err := s.Hints().Queued(ctx); err != nil || len(tags) != n-len(read) {
		t.Errorf("after spending %d: %d tags, %v; want %d", len(read), len(tags), err, n-len(read))
	}
}

func TestHintsAutoClaimAndTouch(t *testing.T) {
	s := newStore(t)
	_ = s.Hints().EnsureGroup(ctx)
	_, _, _ = s.Admissions().Ready(ctx, ReadyReq{Hint: tag})
	hints, _ := s.Hints().Read(ctx, "dead", 1, 0)
	if len(hints) != 1 {
		t.Fatal(hints)
	}
	if got, _ := s.Hints().AutoClaim(ctx, "alive", time.Hour, 10); len(got) != 0 {
		t.Errorf("claimed a fresh hint: %v", got)
	}
	if got, err := s.Hints().AutoClaim(ctx, "alive", 0, 10); err != nil || len(got) != 1 || got[0].Tag != tag {
		t.Fatalf("AutoClaim = %v, %v", got, err)
	}
	if err := s.Hints().Touch(ctx, "alive", []string{hints[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Hints().Read(ctx, "other", 1, 10*time.Millisecond); len(got) != 0 {
		t.Errorf("a delivered hint was read again: %v", got)
	}
}

// TestScriptPruneConsumers: consumers holding nothing and idle long enough are deleted, except
// the caller's own; a consumer holding a hint never is, however long it has been idle.
func TestScriptPruneConsumers(t *testing.T) {
	s := newStore(t)
	_ = s.Hints().EnsureGroup(ctx)
	read := func(consumer string) []Hint {
		t.Helper()
		if _, _, err := s.Admissions().Ready(ctx, ReadyReq{Hint: tag}); err != nil {
			t.Fatal(err)
		}
		h, err := s.Hints().Read(ctx, consumer, 1, 0)
		if err != nil || len(h) != 1 {
			t.Fatalf("%s read %v, %v", consumer, h, err)
		}
		return h
	}
	read("holder") // dies holding a hint
	for _, c := range []string{"dead1", "dead2", "dead3", "self"} {
		h := read(c)
		if err := s.Counters().Settle(ctx, Settlement{Acks: []string{h[0].ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := consumers(t, s); got != "[dead1:0 dead2:0 dead3:0 holder:1 self:0]" {
		t.Fatalf("consumers = %s", got)
	}
	if names, err := s.Hints().PruneConsumers(ctx, "self", time.Hour, 10); err != nil || len(names) != 0 {
		t.Errorf("PruneConsumers(idle an hour) = %v, %v; want none: all were active just now", names, err)
	}
	if names, err := s.Hints().PruneConsumers(ctx, "self", 0, 2); err != nil || fmt.Sprint(names) != "[dead1 dead2]" {
		t.Errorf("PruneConsumers(max 2) = %v, %v; want dead1 and dead2", names, err)
	}
	if names, err := s.Hints().PruneConsumers(ctx, "self", 0, 10); err != nil || fmt.Sprint(names) != "[dead3]" {
		t.Errorf("PruneConsumers = %v, %v; want dead3", names, err)
	}
	if got := consumers(t, s); got != "[holder:1 self:0]" {
		t.Errorf("consumers = %s, want the holder of a hint and the caller", got)
	}
	// Once the recoverer reclaimed its hint, the holder goes too.
	if h, err := s.Hints().AutoClaim(ctx, "self", 0, 10); err != nil || len(h) != 1 {
		t.Fatalf("AutoClaim = %v, %v", h, err)
	}
	if names, _ := s.Hints().PruneConsumers(ctx, "self", 0, 10); fmt.Sprint(names) != "[holder]" {
		t.Errorf("PruneConsumers after the reclaim = %v, want holder", names)
	}
	if got := consumers(t, s); got != "[self:1]" {
		t.Errorf("consumers = %s", got)
	}
}
