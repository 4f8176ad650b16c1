package chantest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/render"
)

// QuietLog is a logger that writes nowhere.
var QuietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// Context is a context that ends after 30 s or with the test.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ActionKey is the key the tests sign interactive ids with.
var ActionKey = func() render.Key {
	k, err := render.NewKey([]byte("action-key-0123456789abcdef-test"))
	if err != nil {
		panic(err)
	}
	return k
}()

// ErrTooLong is what Channel answers an edit longer than MaxEdit, and every Send when
// FailSendsAll is set.
var ErrTooLong = errors.New("fake: message too long to edit")

// Metrics counts every call of the router's and delivery's metrics by its labels.
type Metrics struct {
	mu sync.Mutex
	n  map[string]int
}

// NewMetrics returns an empty Metrics.
func NewMetrics() *Metrics { return &Metrics{n: map[string]int{}} }

func (m *Metrics) add(k string) {
	m.mu.Lock()
	m.n[k]++
	m.mu.Unlock()
}

// Get is how often the labels k ("outbound/test/send_failed") were counted.
func (m *Metrics) Get(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[k]
}

func (m *Metrics) Inbound(p string)             { m.add("inbound/" + p) }
func (m *Metrics) DedupeHit(p string)           { m.add("dedupe/" + p) }
func (m *Metrics) Refused(p, reason string)     { m.add("refused/" + p + "/" + reason) }
func (m *Metrics) Command(p, c string)          { m.add("command/" + p + "/" + c) }
func (m *Metrics) OutboundError(p, kind string) { m.add("outbound/" + p + "/" + kind) }

// String lists the counts, for a test's failure message.
func (m *Metrics) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(m.n)
}
