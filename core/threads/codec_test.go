package threads

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func validThreadFields() map[string]string {
	return map[string]string{"id": "01JTHREAD00000000000000000", "conv": "c/1", "created": "1764504000000", "session": "01JSESSION0000000000000000"}
}

func TestDecodeThreadMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(map[string]string)
	}{
		{"no id", func(f map[string]string) { delete(f, "id") }},
		{"empty id", func(f map[string]string) { f["id"] = "" }},
		{"other conversation", func(f map[string]string) { f["conv"] = "c/2" }},
		{"no conversation", func(f map[string]string) { delete(f, "conv") }},
		{"no created", func(f map[string]string) { delete(f, "created") }},
		{"created not a number", func(f map[string]string) { f["created"] = "yesterday" }},
		{"settings not JSON", func(f map[string]string) { f["settings"] = `{"model":` }},
		{"settings wrong type", func(f map[string]string) { f["settings"] = `{"model":42}` }},
		{"settings empty", func(f map[string]string) { f["settings"] = `` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := validThreadFields()
			tc.change(f)
			_, err := decodeThread("k", "c/1", f)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Key != "k" || ce.Reason == "" {
				t.Errorf("decodeThread: %v, want a *CorruptError naming the key and reason", err)
			}
		})
	}
	th, err := decodeThread("k", "c/1", validThreadFields())
	if err != nil || th.ID != "01JTHREAD00000000000000000" || !th.CreatedAt.Equal(time.UnixMilli(1764504000000)) {
		t.Errorf("decodeThread of valid fields = %+v, %v", th, err)
	}
}

func TestDecodeTurnMalformed(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"empty", ``},
		{"object", `{"a":1}`},
		{"null", `null`},
		{"empty array", `[]`},
		{"truncated", `[{"a":1},{"b":`},
		{"trailing garbage", `[{"a":1}]x`},
		{"not JSON", "\x00\xff"},
		{"trailing comma", `[{"a":1},]`},
		{"missing comma", `[{"a":1} {"b":2}]`},
		{"bad escape", `[{"a":"\x"}]`},
		{"short unicode escape", `[{"a":"\u12"}]`},
		{"control character in a string", "[{\"a\":\"\x01\"}]"},
		{"bad number", `[{"a":01}]`},
		{"bad literal", `[{"a":tru}]`},
		{"object key not a string", `[{a:1}]`},
		{"nested too deeply", "[" + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "]"}, // encoding/json's limit
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeTurn("k", 3, []byte(tc.data)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("decodeTurn(%q) = %v, want ErrCorrupt", tc.data, err)
			}
		})
	}
}

// TestDecodeLogConcatenatesTurns: BeginRun's decoding of a whole log is the turns' events in
// order, and names the turn that does not decode.
func TestDecodeLogConcatenatesTurns(t *testing.T) {
	events, sizes, err := decodeLog("k", 0, []string{`[{"a":1}]`, ` [ "x" , [2,3] , null ] `, `[{"b":2}]`})
	want := []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`"x"`), json.RawMessage(`[2,3]`), json.RawMessage(`null`), json.RawMessage(`{"b":2}`)}
	if err != nil || !reflect.DeepEqual(events, want) || !reflect.DeepEqual(sizes, []int{1, 3, 1}) {
		t.Fatalf("decodeLog = %s %v, %v; want %s [1 3 1]", events, sizes, err, want)
	}
	// Events share one buffer; appending to one must not overwrite the next.
	_ = append(events[1], '!')
	if string(events[2]) != `[2,3]` {
		t.Fatalf("appending to an event overwrote the next: %s", events[2])
	}
	if events, _, err := decodeLog("k", 0, nil); events != nil || err != nil {
		t.Fatalf("decodeLog(nil) = %s, %v", events, err)
	}
	_, _, err = decodeLog("k", 0, []string{`[1]`, `[]`})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Key != "k" || !strings.Contains(ce.Reason, "turn 1") {
		t.Fatalf("decodeLog of an empty second turn = %v, want a *CorruptError naming turn 1", err)
	}
	// Read after a mark, turns are named by their place in the log.
	_, _, err = decodeLog("k", 7, []string{`[1]`, `{}`})
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "turn 8") {
		t.Fatalf("decodeLog from 7 of a bad second turn = %v, want a *CorruptError naming turn 8", err)
	}
}

func validClarificationFields() map[string]string {
	return map[string]string{
		"id": "c1", "state": "pending", "user": "u1", "exp": "1764504600000",
		"data": `{"id":"c1","conv":"c/1","run":"r1","user":"u1","form":{"q":1},"created":1764504000000,"expires":1764504600000}`,
	}
}

func TestDecodeClarificationMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(map[string]string)
	}{
		{"no data", func(f map[string]string) { delete(f, "data") }},
		{"data not JSON", func(f map[string]string) { f["data"] = `{"id":` }},
		{"data wrong type", func(f map[string]string) { f["data"] = `{"id":"c1","expires":"soon"}` }},
		{"data is an array", func(f map[string]string) { f["data"] = `[1,2]` }},
		{"id mismatch", func(f map[string]string) { f["id"] = "c2" }},
		{"no conversation", func(f map[string]string) {
			f["data"] = `{"id":"c1","run":"r1","user":"u1","created":1,"expires":1764504600000}`
		}},
		{"user mismatch", func(f map[string]string) { f["user"] = "u2" }},
		{"expiry mismatch", func(f map[string]string) { f["exp"] = "1" }},
		{"unknown state", func(f map[string]string) { f["state"] = "maybe" }},
		{"no state", func(f map[string]string) { delete(f, "state") }},
		{"answered without time", func(f map[string]string) { f["state"] = "answered" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := validClarificationFields()
			tc.change(f)
			_, err := decodeClarification("k", f)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Reason == "" {
				t.Errorf("decodeClarification: %v, want a *CorruptError with a reason", err)
			}
		})
	}
	c, err := decodeClarification("k", validClarificationFields())
	if err != nil || c.ID != "c1" || string(c.Form) != `{"q":1}` || c.State != StatePending {
		t.Errorf("decodeClarification of valid fields = %+v, %v", c, err)
	}
}

// TestCorruptStoredDataGivesClearError proves that values damaged in Redis reach the caller as
// ErrCorrupt errors naming the key, never a panic or a silently wrong value.
func TestCorruptStoredDataGivesClearError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		const conv = "c/corrupt"
		ck := keysOf(s).conv(conv)
		th, _, err := s.Conversations().Ensure(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.History().AppendTurn(ctx, conv, th.ID, turnOf(1, 1)); err != nil {
			t.Fatal(err)
		}
		put, err := s.Clarifications().Put(ctx, askOf(conv))
		if err != nil {
			t.Fatal(err)
		}
		c.HSet(ctx, ck.thread, "settings", "{broken")
		c.RPush(ctx, ck.log, "not a turn")
		c.HSet(ctx, ck.clar, "data", "[]")

		checks := map[string]error{}
		_, checks["Get"] = s.Conversations().Get(ctx, conv)
		_, _, checks["Ensure"] = s.Conversations().Ensure(ctx, conv)
		_, checks["LoadEvents"] = s.History().LoadEvents(ctx, conv)
		_, checks["Get"] = s.Clarifications().Get(ctx, put.ID)
		_, _, checks["Pending"] = s.Clarifications().Pending(ctx, conv)
		_, checks["Take"] = s.Clarifications().Take(ctx, put.ID, put.AllowedUserID)
		for name, err := range checks {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Key == "" {
				t.Errorf("%s on corrupt data: %v, want a *CorruptError naming the key", name, err)
			}
		}

		c.HSet(ctx, ck.clar, "exp", "never")
		if _, err := s.Clarifications().Take(ctx, put.ID, put.AllowedUserID); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Take with an unreadable expiry: %v, want ErrCorrupt", err)
		}
	})
}

func FuzzDecodeClarification(f *testing.F) {
	v := validClarificationFields()
	f.Add(v["data"], "pending", "c1", "u1", "1764504600000", "")
	f.Add(v["data"], "answered", "c1", "u1", "1764504600000", "1764504300000")
	f.Add(`{"id":"c1","conv":"c/1","user":"u1","form":null,"expires":5}`, "cancelled", "c1", "u1", "5", "")
	f.Add(`{"form":[}`, "pending", "", "", "", "")
	f.Add(`null`, "", "", "", "-1", "x")
	f.Fuzz(func(t *testing.T, data, state, id, user, exp, answeredAt string) {
		fields := map[string]string{"data": data, "state": state, "id": id, "user": user, "exp": exp, "answered_at": answeredAt}
		c, err := decodeClarification("k", fields)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		if c.ID == "" || c.ConvKey == "" || c.AllowedUserID == "" {
			t.Fatalf("decoded an incomplete clarification %+v", c)
		}
		// What decodes must survive its own encoding.
		again, err := encodeClarification(c)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", c, err)
		}
		fields["data"] = string(again)
		c2, err := decodeClarification("k", fields)
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed %+v into %+v (%v)", c, c2, err)
		}
	})
}

func FuzzDecodeThread(f *testing.F) {
	v := validThreadFields()
	f.Add(v["id"], v["conv"], v["created"], `{"model":"m","extra":{"a":"b"}}`)
	f.Add("x", "c/1", "-5", `null`)
	f.Add("", "", "", `{`)
	f.Fuzz(func(t *testing.T, id, conv, created, settings string) {
		th, err := decodeThread("k", "c/1", map[string]string{"id": id, "conv": conv, "created": created, "settings": settings})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		if th.ID == "" || th.ConvKey != "c/1" {
			t.Fatalf("decoded an invalid thread %+v", th)
		}
	})
}

func FuzzDecodeTurn(f *testing.F) {
	f.Add([]byte(`[{"a":1},{"b":[2,3]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[1,"x",null]`))
	f.Add([]byte(`[{"a":`))
	f.Add([]byte(" [ \"a,]\\\"[\" , {\"b\":[1,{\"c\":\"}\"}]}\t,\n-1.5e3 ,true] "))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := decodeTurn("k", 0, data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return
		}
		if len(events) == 0 {
			t.Fatal("decoded a turn without events")
		}
		// What decodes must survive its own encoding.
		enc, err := encodeTurn(events)
		if err != nil {
			t.Fatalf("re-encoding %s: %v", events, err)
		}
		again, err := decodeTurn("k", 0, enc)
		if err != nil || !reflect.DeepEqual(again, events) {
			t.Fatalf("round trip changed %s into %s (%v)", events, again, err)
		}
	})
}

func TestEncodeTurnKeepsEventBytes(t *testing.T) {
	events := []json.RawMessage{json.RawMessage(` {"a": 1} `), json.RawMessage(`"s"`), json.RawMessage("\n[1, 2]\t")}
	enc, err := encodeTurn(events)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTurn("k", 0, enc)
	want := []json.RawMessage{json.RawMessage(`{"a": 1}`), json.RawMessage(`"s"`), json.RawMessage(`[1, 2]`)}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("round trip = %s, %v; want %s", got, err, want)
	}
}
