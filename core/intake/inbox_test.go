package intake

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

// TestInboxKeepsBatchesUntilDone proves the inbox: batches appended to Ptelegram:inbox:<bot id>
// (a stream with no TTL) come back oldest first with their updates byte for byte; an entry that
// is not a batch is skipped with an error line and does not block the rest; Done saves the
// batch's end as the offset and forgets the batch.
func TestInboxKeepsBatchesUntilDone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		logs := &logbuf.Buffer{}
		in, key := NewInbox(b.c, b.prefix, "1", slog.New(slog.NewTextHandler(logs, nil))), b.prefix+"telegram:inbox:1"
		offsets := NewOffsets(b.c, b.prefix, "1")

		first := []json.RawMessage{json.RawMessage(`{"update_id":10}`), json.RawMessage(`{"update_id":11,"message":{"text":"a,b]"}}`)}
		id1, err := in.Append(ctx, 10, 12, first)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Append(ctx, 12, 13, []json.RawMessage{json.RawMessage(`{"update_id":12}`)}); err != nil {
			t.Fatal(err)
		}
		if n := pttl(t, b.c, key); n != -1 {
			t.Fatalf("the inbox expires (PTTL %d), want no TTL", n)
		}
		// Something else wrote under the key: skipped with an error line, polling is not blocked.
		b.c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"from", "x"}})

		kept, err := in.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(kept) != 2 || kept[0].ID != id1 || kept[0].From != 10 || kept[0].Next != 12 || kept[1].Next != 13 {
			t.Fatalf("pending = %+v", kept)
		}
		if len(kept[0].Updates) != 2 || string(kept[0].Updates[1]) != string(first[1]) {
			t.Fatalf("first batch's updates = %s", kept[0].Updates)
		}
		if !strings.Contains(logs.String(), "skipping an unreadable entry") {
			t.Fatalf("the unreadable entry was not reported: %s", logs.String())
		}

		if err := in.Done(ctx, id1, 12); err != nil {
			t.Fatal(err)
		}
		if off, _ := offsets.LoadOffset(ctx); off != 12 {
			t.Fatalf("offset = %d after Done, want 12", off)
		}
		kept, _ = in.Pending(ctx)
		if len(kept) != 1 || kept[0].From != 12 {
			t.Fatalf("pending after Done = %+v", kept)
		}
	})
}

// TestInboxDoneNeverMovesTheOffsetBack proves Done saves through saveForward: a batch handed
// over after a later one (by a slower process) forgets the batch but leaves the larger offset.
func TestInboxDoneNeverMovesTheOffsetBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		in, offsets := NewInbox(b.c, b.prefix, "1", nil), NewOffsets(b.c, b.prefix, "1")
		id, err := in.Append(ctx, 10, 12, []json.RawMessage{json.RawMessage(`{"update_id":10}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := offsets.SaveOffset(ctx, 20); err != nil {
			t.Fatal(err)
		}
		if err := in.Done(ctx, id, 12); err != nil {
			t.Fatal(err)
		}
		if off, _ := offsets.LoadOffset(ctx); off != 20 {
			t.Fatalf("offset = %d after a late Done, want 20", off)
		}
		if kept, _ := in.Pending(ctx); len(kept) != 0 {
			t.Fatalf("pending after Done = %+v", kept)
		}
	})
}

// TestInboxDoneKeepsTheBatchWhenTheOffsetIsNotSaved proves the order of Done's two steps: when
// the offset cannot be saved (here the script fails on a stored value that is not a number), the
// batch stays kept, so its updates are neither lost nor skipped.
func TestInboxDoneKeepsTheBatchWhenTheOffsetIsNotSaved(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		in := NewInbox(b.c, b.prefix, "1", nil)
		id, err := in.Append(ctx, 10, 12, []json.RawMessage{json.RawMessage(`{"update_id":10}`)})
		if err != nil {
			t.Fatal(err)
		}
		b.c.Set(ctx, b.prefix+"telegram:offset:1", "not-an-offset", 0)
		if err := in.Done(ctx, id, 12); err == nil || !strings.HasPrefix(err.Error(), "telegram offset:") {
			t.Fatalf("Done = %v, want the offset's error", err)
		}
		if kept, _ := in.Pending(ctx); len(kept) != 1 || kept[0].ID != id {
			t.Fatalf("pending after a failed Done = %+v, want the batch kept", kept)
		}
	})
}

func TestDecodeInboxEntryRefusesWhatIsNotABatch(t *testing.T) {
	cases := []struct {
		name   string
		values map[string]any
	}{
		{"empty", map[string]any{}},
		{"from not a number", map[string]any{"from": "x", "next": "2", "updates": "[]"}},
		{"negative next", map[string]any{"from": "1", "next": "-2", "updates": "[]"}},
		{"updates not JSON", map[string]any{"from": "1", "next": "2", "updates": "[{"}},
		{"updates an object", map[string]any{"from": "1", "next": "2", "updates": "{}"}},
		{"updates not a string", map[string]any{"from": "1", "next": "2", "updates": 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := decodeInboxEntry("1-0", c.values); err == nil || !strings.Contains(err.Error(), "entry 1-0") {
				t.Fatalf("err = %v, want one naming the entry", err)
			}
		})
	}
	b, err := decodeInboxEntry("2-0", map[string]any{"from": "1", "next": "3", "updates": `[{"update_id":1},{"update_id":2}]`})
	if err != nil || b.From != 1 || b.Next != 3 || len(b.Updates) != 2 {
		t.Fatalf("a good entry: %+v, %v", b, err)
	}
}

func FuzzDecodeInboxEntry(f *testing.F) {
	f.Add("1", "2", `[{"update_id":1}]`)
	f.Add("", "", "")
	f.Add("9223372036854775807", "0", "[]")
	f.Fuzz(func(t *testing.T, from, next, updates string) {
		b, err := decodeInboxEntry("1-0", map[string]any{"from": from, "next": next, "updates": updates})
		if err == nil && (b.From < 0 || b.Next < 0) {
			t.Fatalf("accepted negative offsets: %+v", b)
		}
	})
}
