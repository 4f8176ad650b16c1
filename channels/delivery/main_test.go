package delivery

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests' shared helpers, under the names the tests use.
var (
	quietLog        = chantest.QuietLog
	ctxT            = chantest.Context
	realRedis       = redistest.Client
	uniquePrefix    = redistest.Prefix
	testActionKey   = chantest.ActionKey
	newFakeChannel  = chantest.NewChannel
	newCountMetrics = chantest.NewMetrics
)

type (
	fakeChannel  = chantest.Channel
	countMetrics = chantest.Metrics
	sendOnly     = chantest.SendOnly
	editNoDelete = chantest.EditNoDelete
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

var peopleForm = runs.Form{Question: "How many people?", Fields: []runs.FormField{
	{ID: "people", Label: "People", Kind: runs.FieldChoice, Options: []string{"2", "4", "6"}, Required: true},
}}

// memRecords is Records in memory, for the tests that need no Redis: what threads.Records does
// with outbound records (SET NX per run and step), without expiry.
type memRecords struct {
	mu  sync.Mutex
	out map[string][]byte
}

func newMemRecords() *memRecords { return &memRecords{out: map[string][]byte{}} }

func (m *memRecords) RecordOutbound(_ context.Context, runID, step string, value []byte) (bool, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.out[runID+"/"+step]; ok {
		return false, b, nil
	}
	m.out[runID+"/"+step] = slices.Clone(value)
	return true, nil, nil
}

func (m *memRecords) Outbound(_ context.Context, runID, step string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.out[runID+"/"+step]
	return b, ok, nil
}

func (m *memRecords) Lookup(_ context.Context, runID string, steps, _ []string) (threads.RunRecords, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := threads.RunRecords{Outbound: map[string][]byte{}}
	for _, s := range steps {
		if b, ok := m.out[runID+"/"+s]; ok {
			rec.Outbound[s] = b
		}
	}
	return rec, nil
}

// TestMemRecordsKeepTheFirstRecord holds the in-memory records to the SET NX rule the tests rely on.
func TestMemRecordsKeepTheFirstRecord(t *testing.T) {
	m := newMemRecords()
	ctx := context.Background()
	if first, _, _ := m.RecordOutbound(ctx, "r", "final", []byte("a")); !first {
		t.Fatal("the first record was not stored")
	}
	first, existing, _ := m.RecordOutbound(ctx, "r", "final", []byte("b"))
	if first || string(existing) != "a" {
		t.Fatalf("second record: first %v, existing %q; want false, \"a\"", first, existing)
	}
	rec, _ := m.Lookup(ctx, "r", []string{"final", "card"}, nil)
	if string(rec.Outbound["final"]) != "a" || len(rec.Outbound) != 1 {
		t.Fatalf("lookup %v, want only final=a", rec.Outbound)
	}
}
