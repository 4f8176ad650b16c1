package kit

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

var errTestNotReady = errors.New("test: not receiving")

// TestLifecycleStartsOnce proves the start guard: the first Begin starts, a second one and one
// after Stop are refused naming the platform, and Err says each phase (nil only while
// receiving).
func TestLifecycleStartsOnce(t *testing.T) {
	l := NewLifecycle("test", errTestNotReady)
	if err := l.Err(); !errors.Is(err, errTestNotReady) || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Err before Start: %v", err)
	}
	if err := l.Begin(); err != nil {
		t.Fatalf("first Begin: %v", err)
	}
	if err := l.Err(); !strings.Contains(err.Error(), "starting") {
		t.Fatalf("Err while starting: %v", err)
	}
	if err := l.Begin(); err == nil || !strings.HasPrefix(err.Error(), "test: start: already started") {
		t.Fatalf("second Begin: %v", err)
	}
	l.Receiving()
	if err := l.Err(); err != nil || !l.IsReceiving() {
		t.Fatalf("Err while receiving: %v", err)
	}
	if !l.Stop() || !l.Stopped() || l.IsReceiving() {
		t.Fatal("Stop after Begin did not report it, or is not stopped")
	}
	l.Receiving() // a Start finishing after Stop does not revive it
	if err := l.Err(); !errors.Is(err, errTestNotReady) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Err after Stop: %v", err)
	}
	if err := l.Begin(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Begin after Stop: %v", err)
	}
	fresh := NewLifecycle("test", errTestNotReady)
	if fresh.Stop() {
		t.Fatal("Stop without Start reported a start")
	}
	if err := fresh.Begin(); err == nil {
		t.Fatal("Begin after a Stop without Start was accepted")
	}
}

// TestLivenessSaysHowLongTheIntakeWasSilent proves the readiness clock: silent before any sign
// of life, alive within the window, silent past it with how long, alive again after a beat.
func TestLivenessSaysHowLongTheIntakeWasSilent(t *testing.T) {
	var l Liveness
	now := time.Unix(1000, 0)
	if _, ok := l.Quiet(now); ok {
		t.Fatal("a clock that saw nothing has a last beat")
	}
	if err := l.Silent(now, time.Minute, errTestNotReady, "connection 1"); !errors.Is(err, errTestNotReady) ||
		!strings.Contains(err.Error(), "connection 1 has not connected") {
		t.Fatalf("Silent before a beat: %v", err)
	}
	l.Beat(now)
	if err := l.Silent(now.Add(time.Minute), time.Minute, errTestNotReady, "c"); err != nil {
		t.Fatalf("Silent at the window's edge: %v", err)
	}
	err := l.Silent(now.Add(90*time.Second), time.Minute, errTestNotReady, "c")
	if !errors.Is(err, errTestNotReady) || !strings.Contains(err.Error(), "1m30s") {
		t.Fatalf("Silent past the window: %v", err)
	}
	l.Beat(now.Add(90 * time.Second))
	if q, ok := l.Quiet(now.Add(100 * time.Second)); !ok || q != 10*time.Second {
		t.Fatalf("Quiet = %v %v, want 10s", q, ok)
	}
}

// TestPagesKeepsTheCountedRendering proves Count's rendering of a card is what the next Pieces
// of an equal card returns, without rendering again, once; text is rendered each time.
func TestPagesKeepsTheCountedRendering(t *testing.T) {
	var renders atomic.Int32
	p := Pages[string]{Render: func(m channels.Message) ([]string, error) {
		renders.Add(1)
		if m.Card != nil {
			return []string{m.Card.Title, "2"}, nil
		}
		return []string{m.Text}, nil
	}}
	card := &render.Card{Title: "answer", Footer: render.Footer{RunID: "01RUN"}}
	if n, err := p.Count(channels.Message{Card: card}); n != 2 || err != nil {
		t.Fatalf("Count = %d, %v", n, err)
	}
	same := *card
	if ps, err := p.Pieces(channels.Message{Card: &same}); err != nil || len(ps) != 2 || renders.Load() != 1 {
		t.Fatalf("Pieces after Count: %v %v, %d renders; want the kept one", ps, err, renders.Load())
	}
	if _, err := p.Pieces(channels.Message{Card: &same}); err != nil || renders.Load() != 2 {
		t.Fatalf("a kept rendering was taken twice (%d renders)", renders.Load())
	}
	if ps, _ := p.Pieces(channels.Message{Text: "hi"}); len(ps) != 1 || ps[0] != "hi" {
		t.Fatalf("text pieces %v", ps)
	}
}
