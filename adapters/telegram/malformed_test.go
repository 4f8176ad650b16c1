package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// wireUpdate is a well-formed private message update from ann.
func wireUpdate(id int64, text string) string {
	return `{"update_id":` + strconv.FormatInt(id, 10) + `,"message":{"message_id":` + strconv.FormatInt(id, 10) +
		`,"from":{"id":42,"is_bot":false,"first_name":"Ann"},"chat":{"id":42,"type":"private"},"date":1,"text":"` + text + `"}}`
}

func TestReadUpdateID(t *testing.T) {
	tests := []struct {
		raw  string
		want int64
	}{
		{`{"update_id":7}`, 7},
		{`{"update_id":"7"}`, 7},
		{`{"update_id":7,"message":"not an object"}`, 7},
		{`{"update_id":9223372036854775807}`, 9223372036854775807},
		{`{}`, 0},
		{`{"update_id":null}`, 0},
		{`{"update_id":0}`, 0},
		{`{"update_id":-7}`, 0},
		{`{"update_id":7.5}`, 0},
		{`{"update_id":1e3}`, 0},
		{`{"update_id":"7a"}`, 0},
		{`{"update_id":{"n":7}}`, 0},
		{`{"update_id":92233720368547758070}`, 0},
		{`[7]`, 0},
		{`"7"`, 0},
		{`7`, 0},
		{`null`, 0},
		{`{"UPDATE_ID":7}`, 7},
		{`{"update\u005fid":7}`, 7},
		{`{"update_id":1,"update_id":2}`, 2},
		{`{"update_id":1,"update_id":null}`, 0},
		{` { "message" : {"update_id":5} , "update_id" : 8 } `, 8},
		{`{"message":{"update_id":5}}`, 0},
		{`{"update_id":7,}`, 0},
		{`{"update_id":7} x`, 0},
		{`{"update_id":7,"message":{"text":"\x"}}`, 0},
		{`{"update_id":"\u0037"}`, 7},
		{``, 0},
	}
	for _, tt := range tests {
		if got := readUpdateID(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("readUpdateID(%s) = %d, want %d", tt.raw, got, tt.want)
		}
	}
}

// FuzzReadUpdateID checks the one-pass read of an update's id against encoding/json's, which
// it must equal on any input.
func FuzzReadUpdateID(f *testing.F) {
	for _, s := range []string{`{"update_id":7}`, `{"update_id":"7"}`, `{"UPDATE_ID":7}`, `{"update_id":1,"update_id":2}`,
		`{"update_id":7,"message":{"message_id":1,"chat":{"id":2},"text":"hi \u00e9"}}`, `{"update_id":null}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var head updateHead
		var want int64
		if json.Unmarshal(raw, &head) == nil {
			want = parseUpdateID(head.UpdateID)
		}
		if got := readUpdateID(raw); got != want {
			t.Fatalf("readUpdateID(%q) = %d, encoding/json reads %d", raw, got, want)
		}
	})
}

// readIDs sets the entries' ids as handleBatch does for malformed updates (readUpdateID agrees
// with decodeUpdate on every well-formed one).
func readIDs(entries []entry) []entry {
	for i := range entries {
		entries[i].id = readUpdateID(entries[i].raw)
	}
	return entries
}

// idsOf lists each entry as its id, "?floor" for an unreadable id with a floor, "?" without one,
// and "!" for the element an answer breaks off in.
func idsOf(entries []entry) []string {
	var out []string
	for _, e := range entries {
		switch {
		case e.raw == nil:
			out = append(out, "!"+strconv.FormatInt(e.floor, 10))
		case e.id > 0:
			out = append(out, strconv.FormatInt(e.id, 10))
		case e.floor > 0:
			out = append(out, "?"+strconv.FormatInt(e.floor, 10))
		default:
			out = append(out, "?")
		}
	}
	return out
}

func TestMalformedBatchesAreReadElementByElement(t *testing.T) {
	u := func(id int64) string { return wireUpdate(id, "x") }
	tests := []struct {
		name   string
		result string // the result array of a getUpdates answer
		offset int64
		want   []string
		// salvaged: the answer is not valid JSON, and only salvageBatch reads it.
		salvaged bool
	}{
		{"empty", `[]`, 100, nil, false},
		{"all well formed", "[" + u(100) + "," + u(101) + "]", 100, []string{"100", "101"}, false},
		{"no update_id in the middle", "[" + u(100) + `,{"message":{}},` + u(102) + "]", 100, []string{"100", "?101", "102"}, false},
		{"unreadable ids at the end", "[" + u(100) + `,{"update_id":"x"},7]`, 100, []string{"100", "?101", "?102"}, false},
		{"unreadable first, bounded by the offset", `[null,` + u(101) + "]", 100, []string{"?100", "101"}, false},
		{"unreadable with no offset and nothing before it", `[{"update_id":1.5},` + u(101) + "]", 0, []string{"?", "101"}, false},
		{"only an unreadable one, no offset", `[{}]`, 0, []string{"?"}, false},
		{"string id read", `[{"update_id":"100"}]`, 0, []string{"100"}, false},
		{"ids out of sequence: the floor stays below", "[" + u(100) + `,{},` + u(150) + `,{}]`, 100, []string{"100", "?101", "150", "?151"}, false},
		{"breaks inside an element: left for the next poll", "[" + u(100) + `,{"update_id":101,"message":{"text":"x}`, 100, []string{"100"}, true},
		{"breaks between elements", "[" + u(100) + `,` + u(101) + ` garbage`, 100, []string{"100", "101"}, true},
		{"breaks in the first element: skipped", `[nonsense,` + u(101) + "]", 100, []string{"!100"}, true},
		{"breaks in the first element, no offset", `[{"update_id":}]`, 0, []string{"!0"}, true},
		{"ends after a comma", "[" + u(100) + ",", 100, []string{"100"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"ok":true,"result":` + tt.result + `}`
			entries, ok := salvageBatch([]byte(body))
			if !ok && len(tt.want) > 0 {
				t.Fatalf("salvageBatch found nothing in %s", body)
			}
			floorIDs(readIDs(entries), tt.offset)
			if got := idsOf(entries); !slices.Equal(got, tt.want) {
				t.Fatalf("read %q, want %q", got, tt.want)
			}
			if valid := json.Valid([]byte(body)); valid == tt.salvaged {
				t.Fatalf("answer valid JSON = %v; the case says salvaged = %v", valid, tt.salvaged)
			}
			if tt.salvaged {
				return
			}
			// A valid answer reads the same through splitBatch, as the poll does with the library's
			// result.
			split, complete := splitBatch(json.NewDecoder(strings.NewReader(tt.result)))
			floorIDs(readIDs(split), tt.offset)
			if !complete || !slices.Equal(idsOf(split), tt.want) {
				t.Fatalf("splitBatch read %q (complete %v), want %q", idsOf(split), complete, tt.want)
			}
		})
	}
}

func TestSalvageBatchNeedsAnAnswerWithUpdates(t *testing.T) {
	for _, body := range []string{
		``,
		`garbage`,
		`[` + wireUpdate(1, "x") + `]`,
		`{"ok":false,"result":[` + wireUpdate(1, "x") + `,`,
		`{"ok":true,"result":{"update_id":1}`,
		`{"ok":true,"result":[`,
		`{"ok":true,"description":`,
		`{"ok":true}`,
	} {
		if entries, ok := salvageBatch([]byte(body)); ok {
			t.Errorf("salvageBatch(%q) = %q, want nothing", body, idsOf(entries))
		}
	}
}

// batchChannel is a channel handing over to a recorder without Start, for handleBatch alone.
func batchChannel(t *testing.T, malformed *atomic.Int32) (*Channel, *recorder) {
	t.Helper()
	ch, _ := newChannel(t, telegramfake.New(t), func(c *Config) { c.OnMalformedUpdate = func() { malformed.Add(1) } })
	rec := &recorder{}
	ch.dispatcher.Begin(rec, botIdentity{})
	return ch, rec
}

func TestMalformedUpdatesAreSkippedAndTheOffsetPassesThem(t *testing.T) {
	u := func(id int64) string { return wireUpdate(id, "m"+strconv.FormatInt(id, 10)) }
	tests := []struct {
		name      string
		result    string
		offset    int64
		next      int64
		handed    []string
		malformed int32
	}{
		{"no update_id between good ones", "[" + u(100) + `,{"message":{}},` + u(102) + "]", 100, 103, []string{"m100", "m102"}, 1},
		{"unreadable id last", "[" + u(100) + `,{"update_id":"abc"}]`, 100, 102, []string{"m100"}, 1},
		{"only unreadable ones, offset known", `[7,"x",null]`, 100, 103, nil, 3},
		{"only an unreadable one, no offset yet", `[{}]`, 0, 0, nil, 1},
		{"readable id, malformed message", `[{"update_id":100,"message":{"message_id":1}},` + u(101) + "]", 100, 102, []string{"m101"}, 1},
		{"readable string id", `[{"update_id":"100","message":{}}]`, 0, 101, nil, 1},
		{"wrong field type", `[{"update_id":100,"message":{"message_id":1,"chat":{"id":42},"text":5}},` + u(101) + "]", 100, 102, []string{"m101"}, 1},
		{"readable id far ahead of an unreadable one", `[{},` + u(150) + "]", 100, 151, []string{"m150"}, 1},
		{"answer breaks off after good updates", "[" + u(100) + `,` + u(101) + `,{"update_id":102,"mess`, 100, 102, []string{"m100", "m101"}, 0},
		{"answer breaks off in its first update", `[{"update_id":102,"mess`, 102, 103, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var malformed atomic.Int32
			ch, rec := batchChannel(t, &malformed)
			entries, ok := salvageBatch([]byte(`{"ok":true,"result":` + tt.result + `}`))
			if !ok {
				t.Fatal("nothing read")
			}
			next, err := ch.dispatcher.handleBatch(context.Background(), entries, tt.offset)
			if err != nil {
				t.Fatalf("handleBatch: %v", err)
			}
			if next != tt.next {
				t.Errorf("next offset = %d, want %d", next, tt.next)
			}
			var handed []string
			for _, in := range rec.got() {
				handed = append(handed, in.Text)
			}
			if !slices.Equal(handed, tt.handed) {
				t.Errorf("handed over %q, want %q", handed, tt.handed)
			}
			if n := malformed.Load(); n != tt.malformed {
				t.Errorf("counted %d malformed, want %d", n, tt.malformed)
			}
		})
	}
}

func TestMalformedUpdateWithReadableIDIsCountedOnce(t *testing.T) {
	var malformed atomic.Int32
	ch, _ := batchChannel(t, &malformed)
	entries, _ := salvageBatch([]byte(`{"ok":true,"result":[{"update_id":100,"message":{}}]}`))
	for range 3 { // fetched again, as when an earlier update's failure holds the offset
		ch.dispatcher.handleBatch(context.Background(), slices.Clone(entries), 100)
	}
	if n := malformed.Load(); n != 1 {
		t.Fatalf("counted %d times, want once", n)
	}
}

func TestBlindBatchesBackOffUnlessTheyMoveTheOffsetOnce(t *testing.T) {
	tests := []struct {
		name  string
		moved []bool // per consecutive blind batch
		want  []time.Duration
	}{
		{"in sequence: moved past at once", []bool{true}, []time.Duration{0}},
		{"no offset to bound it", []bool{false, false, false}, []time.Duration{backoff(1), backoff(2), backoff(3)}},
		{"out of sequence: moves one id a poll", []bool{true, true, true}, []time.Duration{0, backoff(2), backoff(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blind := 0
			var got []time.Duration
			for _, m := range tt.moved {
				wait, pause := blindWait(&blind, m)
				if pause != (wait > 0) {
					t.Fatalf("pause %v with wait %v", pause, wait)
				}
				got = append(got, wait)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("waits %v, want %v", got, tt.want)
			}
		})
	}
}

// sleepLog records the waits the poll loop asks for, without waiting; with hold set, the wait
// after the first holdAfter blocks until hold is closed (or ctx ends).
type sleepLog struct {
	hold      chan struct{}
	holdAfter int

	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	block := s.hold != nil && len(s.waits) > s.holdAfter
	s.mu.Unlock()
	if block {
		select {
		case <-s.hold:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

func (s *sleepLog) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// TestMalformedUpdateNeverStopsPolling drives the real library against the fake, which serves
// the malformed update's bytes as they are. Before the fix an update with no readable id that
// came last made the poll loop fetch it again at once, thousands of times a second, until another
// update arrived; an answer that was not valid JSON failed whole, every later update with it.
func TestMalformedUpdateNeverStopsPolling(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"no update_id", `{"message":{"message_id":1,"chat":{"id":42,"type":"private"},"text":"hi"}}`},
		{"update_id a word", `{"update_id":"abc","message":{}}`},
		{"not an object", `[1,2,3]`},
		{"readable id, message without chat", `{"update_id":%d,"message":{"message_id":1}}`},
		{"not JSON", `{"update_id":%d,"message":{"text":"cut`},
		{"huge string id", `{"update_id":"99999999999999999999999"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramfake.New(t)
			store := &MemoryOffsets{}
			var malformed atomic.Int32
			ch, logs := newChannel(t, fake, func(c *Config) {
				c.Offsets = store
				c.OnMalformedUpdate = func() { malformed.Add(1) }
			})
			sl := &sleepLog{}
			ch.clock.Sleep = sl.sleep
			rec := &recorder{}
			if err := ch.Start(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			defer ch.Stop(context.Background())
			// verbatim pushes the malformed update; %d in it becomes the id the fake files it under.
			verbatim := func(prev int64) int64 {
				raw := strings.ReplaceAll(tt.raw, "%d", strconv.FormatInt(prev+1, 10))
				id := fake.PushVerbatim([]byte(raw))
				if id != prev+1 {
					t.Fatalf("fake filed the update under %d, want %d", id, prev+1)
				}
				return id
			}

			// Between good updates, in one batch (or several: the poll runs meanwhile).
			one, _ := fake.PushPrivate(ann, "one")
			verbatim(one)
			two, _ := fake.PushPrivate(ann, "two")
			waitTexts(t, rec, "one", "two")
			eventually(t, "every update confirmed", func() bool { return fake.Pending() == 0 })

			// Alone, last in its batch: confirmed without a busy loop, the poll back to long
			// polling.
			polls := fake.Count("getUpdates")
			bad := verbatim(two)
			eventually(t, "the lone malformed update confirmed", func() bool { return fake.Pending() == 0 })
			if n := fake.Count("getUpdates") - polls; n > 3 {
				t.Errorf("%d getUpdates calls to get past one malformed update, want at most 3", n)
			}
			if w := sl.recorded(); len(w) != 0 {
				t.Errorf("the poll loop paused %v: with ids in sequence nothing should wait", w)
			}
			last, _ := fake.PushPrivate(ann, "three")
			waitTexts(t, rec, "one", "two", "three")
			eventually(t, "offset past the last update", func() bool {
				off, _ := store.LoadOffset(context.Background())
				return off == last+1
			})
			if last != bad+1 {
				t.Fatalf("fake numbered updates out of sequence: %d after %d", last, bad)
			}
			if n := malformed.Load(); n != 2 {
				t.Errorf("counted %d malformed updates, want 2", n)
			}
			out := logs.String()
			if !strings.Contains(out, "skipping a malformed update") {
				t.Errorf("no log of the skipped update:\n%s", out)
			}
			if strings.Contains(out, fake.Token()) || strings.Contains(out, "TEST-fake-token") || strings.Contains(out, fake.URL()) {
				t.Errorf("log holds the token or the API URL:\n%s", out)
			}
		})
	}
}

// waitTexts waits until the handed over texts are want, in order, and fails on any other.
func waitTexts(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	texts := func() []string {
		var out []string
		for _, in := range rec.got() {
			out = append(out, in.Text)
		}
		return out
	}
	eventually(t, "texts "+strings.Join(want, " "), func() bool { return len(texts()) >= len(want) })
	if got := texts(); !slices.Equal(got, want) {
		t.Fatalf("handed over %q, want %q", got, want)
	}
}

func TestUnboundedUnreadableUpdateBacksOffUntilAReadableOnePassesIt(t *testing.T) {
	fake := telegramfake.New(t)
	store := &MemoryOffsets{}
	ch, _ := newChannel(t, fake, func(c *Config) { c.Offsets = store })
	sl := &sleepLog{hold: make(chan struct{}), holdAfter: 4}
	ch.clock.Sleep = sl.sleep
	rec := &recorder{}
	// The very first update has no readable id, and nothing bounds it: no offset saved yet.
	fake.PushVerbatim([]byte(`{"message":{}}`))
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background())
	eventually(t, "backed-off polls", func() bool { return len(sl.recorded()) == 5 })
	for i, d := range sl.recorded() {
		if d != backoff(i+1) {
			t.Errorf("pause %d = %v, want %v (a growing backoff, not a busy loop)", i, d, backoff(i+1))
		}
	}
	if n := fake.Count("getUpdates"); n != 5 {
		t.Errorf("%d getUpdates calls for 5 pauses, want one before each", n)
	}
	last, _ := fake.PushPrivate(ann, "after")
	close(sl.hold)
	waitTexts(t, rec, "after")
	eventually(t, "offset past both", func() bool {
		off, _ := store.LoadOffset(context.Background())
		return off == last+1 && fake.Pending() == 0
	})
}

func TestWebhookAcknowledgesMalformedUpdatesAndGoesOn(t *testing.T) {
	fake := telegramfake.New(t)
	const secret = "s3cret-token_value"
	var malformed atomic.Int32
	rec := &recorder{}
	h := startWith(t, fake, func(c *Config) {
		c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", secret
		c.OnMalformedUpdate = func() { malformed.Add(1) }
	}, rec)
	bodies := []string{
		wireUpdate(10, "before"),
		`{"update_id":`,
		`{"message":{}}`,
		`{"update_id":"x"}`,
		`{"update_id":12,"message":{"message_id":1}}`,
		strings.Repeat(" ", maxUpdateBytes+1),
		wireUpdate(13, "after"),
	}
	for _, body := range bodies {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/telegram", strings.NewReader(body))
		req.Header.Set(SecretHeader, secret)
		h.ch.WebhookHandler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("delivery %.40q answered %d, want 200", body, w.Code)
		}
	}
	if got := rec.got(); len(got) != 2 || got[0].Text != "before" || got[1].Text != "after" {
		t.Fatalf("handed over %+v, want before and after", got)
	}
	if n := malformed.Load(); n != 5 {
		t.Fatalf("counted %d malformed, want 5", n)
	}
	if out := h.logs.String(); strings.Contains(out, secret) || strings.Contains(out, fake.Token()) {
		t.Fatal("log holds the webhook secret or the token")
	}
}

func FuzzSplitBatch(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`null`,
		"[" + wireUpdate(100, "x") + `,{"message":{}},7,"s",null,{"update_id":"101"}]`,
		"[" + wireUpdate(100, "x") + `,{"update_id":101,"mess`,
		`[{"update_id":}]`,
		`[1,,2]`,
		`{"update_id":1}`,
		`[{"update_id":1e3},{"update_id":-1},{"update_id":9223372036854775808}]`,
	} {
		f.Add([]byte(s), int64(100))
	}
	f.Fuzz(func(t *testing.T, data []byte, offset int64) {
		entries, complete := splitBatch(json.NewDecoder(bytes.NewReader(data)))
		for i, e := range readIDs(entries) {
			if e.raw == nil && (complete || len(entries) != 1) {
				t.Fatalf("entry %d of %d has no raw (complete %v)", i, len(entries), complete)
			}
			if e.id < 0 {
				t.Fatalf("negative id %d", e.id)
			}
			// handleBatch takes a well-formed update's id from decodeUpdate and a malformed one's
			// from readUpdateID: they must agree.
			if u, err := decodeUpdate(e.raw); err == nil && u.UpdateID != e.id {
				t.Fatalf("entry %d: update_id %d decoded, %d read", i, u.UpdateID, e.id)
			}
		}
		var whole []json.RawMessage
		if json.Unmarshal(data, &whole) == nil && whole != nil {
			// A valid array: every element, as it is, in order; the envelope reads the same.
			if !complete || len(entries) != len(whole) {
				t.Fatalf("valid array of %d read as %d (complete %v)", len(whole), len(entries), complete)
			}
			for i := range whole {
				if !bytes.Equal(entries[i].raw, whole[i]) {
					t.Fatalf("element %d read as %s, want %s", i, entries[i].raw, whole[i])
				}
			}
			salvaged, ok := salvageBatch([]byte(`{"ok":true,"result":` + string(data) + `}`))
			if ok != (len(whole) > 0) || len(salvaged) != len(whole) {
				t.Fatalf("salvageBatch read %d of %d (ok %v)", len(salvaged), len(whole), ok)
			}
		}
		if offset < 0 {
			offset = -offset
		}
		floorIDs(entries, offset)
		for i, e := range entries {
			if e.id > 0 && e.floor != 0 || offset > 0 && i == 0 && e.id == 0 && e.floor != offset {
				t.Fatalf("entry %d: id %d floor %d with offset %d", i, e.id, e.floor, offset)
			}
		}
	})
}

// FuzzFloorIDsNeverPassTheTrueID builds batches of ascending ids (gaps from the fuzzer), hides
// some ids, and checks that each floor is at most the true id, and exactly it when the ids run
// in sequence — so an offset moved past a floor never passes a later update.
func FuzzFloorIDsNeverPassTheTrueID(f *testing.F) {
	f.Add(int64(100), []byte{0, 0, 0, 0}, uint16(0b1010))
	f.Add(int64(0), []byte{0, 3, 0, 200}, uint16(0b0111))
	f.Add(int64(7), []byte{9, 0, 0}, uint16(0b111))
	f.Fuzz(func(t *testing.T, offset int64, gaps []byte, hidden uint16) {
		if offset < 0 || offset > 1<<40 || len(gaps) > 16 {
			return
		}
		entries := make([]entry, len(gaps))
		truth := make([]int64, len(gaps))
		next, sequential := max(offset, 1), true
		for i, g := range gaps {
			truth[i] = next + int64(g)
			sequential = sequential && g == 0
			next = truth[i] + 1
			if hidden&(1<<i) == 0 {
				entries[i].id = truth[i]
			}
			entries[i].raw = json.RawMessage(`{}`)
		}
		floorIDs(entries, offset)
		for i, e := range entries {
			if e.id > 0 {
				continue
			}
			if e.floor > truth[i] {
				t.Fatalf("entry %d: floor %d above its id %d (offset %d, gaps %v)", i, e.floor, truth[i], offset, gaps)
			}
			if sequential && offset > 0 && e.floor != truth[i] {
				t.Fatalf("entry %d: floor %d, want exactly %d with ids in sequence", i, e.floor, truth[i])
			}
		}
	})
}
