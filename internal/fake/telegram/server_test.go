package telegramfake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

func call(t *testing.T, s *Server, method string, params url.Values) answer {
	t.Helper()
	resp, err := http.PostForm(s.URL()+"/bot"+s.Token()+"/"+method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: decode: %v", method, err)
	}
	if !a.OK && a.ErrorCode != resp.StatusCode {
		t.Fatalf("%s: error_code %d but HTTP %d", method, a.ErrorCode, resp.StatusCode)
	}
	return a
}

func TestParseHTMLAcceptsTelegramTagsAndRejectsTheRest(t *testing.T) {
	tests := []struct {
		name, in, visible string
		ok                bool
	}{
		{"plain", "hello", "hello", true},
		{"nested tags", "<b>bold <i>it</i></b>", "bold it", true},
		{"link", `<a href="https://x.y">x</a>`, "x", true},
		{"pre code", `<pre><code class="language-go">x &lt; y</code></pre>`, "x < y", true},
		{"entities", "&amp;&quot;&#65;&#x42;", `&"AB`, true},
		{"spoiler span", `<span class="tg-spoiler">s</span>`, "s", true},
		{"unknown tag", "<div>x</div>", "", false},
		{"br is not allowed", "a<br>b", "", false},
		{"unclosed", "<b>x", "", false},
		{"misnested", "<b><i>x</b></i>", "", false},
		{"stray lt", "a < b", "", false},
		{"stray gt", "a > b", "", false},
		{"stray amp", "a & b", "", false},
		{"named entity", "&nbsp;", "", false},
		{"span without class", "<span>x</span>", "", false},
		{"a without href", "<a>x</a>", "", false},
		{"invalid utf8", "\xff", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHTML(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseHTML(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if got != tt.visible {
				t.Fatalf("visible = %q, want %q", got, tt.visible)
			}
		})
	}
}

func FuzzParseHTML(f *testing.F) {
	for _, s := range []string{"<b>x</b>", "&lt;", "<a href=\"u\">", "&#x110000;", "<pre><code>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseHTML(s) // must not panic
	})
}

func TestSendMessageValidatesLikeTheBotAPI(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	tests := []struct {
		name   string
		params url.Values
		desc   string
	}{
		{"bad html", url.Values{"chat_id": {"1"}, "text": {"<x>"}, "parse_mode": {"HTML"}}, "Bad Request: can't parse entities"},
		{"too long", url.Values{"chat_id": {"1"}, "text": {strings.Repeat("a", 4097)}}, "Bad Request: message is too long"},
		{"empty", url.Values{"chat_id": {"1"}, "text": {""}}, "Bad Request: message text is empty"},
		{"callback data too long", url.Values{"chat_id": {"1"}, "text": {"x"}, "reply_markup": {`{"inline_keyboard":[[{"text":"a","callback_data":"` + strings.Repeat("d", 65) + `"}]]}`}}, "Bad Request: BUTTON_DATA_INVALID"},
		{"no chat", url.Values{"text": {"x"}}, "Bad Request: chat not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, "sendMessage", tt.params)
			if a.OK || a.ErrorCode != 400 || !strings.HasPrefix(a.Description, tt.desc) {
				t.Fatalf("got ok=%v %d %q, want 400 %q", a.OK, a.ErrorCode, a.Description, tt.desc)
			}
		})
	}
	t.Run("exactly 4096 is accepted", func(t *testing.T) {
		a := call(t, s, "sendMessage", url.Values{"chat_id": {"1"}, "text": {strings.Repeat("&amp;", 4096)}, "parse_mode": {"HTML"}})
		if !a.OK {
			t.Fatalf("refused: %s", a.Description)
		}
	})
}

func TestEditReportsNotModifiedAndNotFound(t *testing.T) {
	s := New(t)
	sent := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"one"}, "message_thread_id": {"9"}})
	var m WireMessage
	_ = json.Unmarshal(sent.Result, &m)
	if m.MessageThreadID != 9 {
		t.Fatalf("thread = %d, want 9", m.MessageThreadID)
	}
	id := url.Values{"chat_id": {"5"}, "message_id": {"1"}, "text": {"one"}}
	if a := call(t, s, "editMessageText", id); a.OK || !strings.HasPrefix(a.Description, "Bad Request: message is not modified") {
		t.Fatalf("unchanged edit: %+v", a)
	}
	id.Set("text", "two")
	if a := call(t, s, "editMessageText", id); !a.OK {
		t.Fatalf("edit: %+v", a)
	}
	if a := call(t, s, "deleteMessage", url.Values{"chat_id": {"5"}, "message_id": {"1"}}); !a.OK {
		t.Fatalf("delete: %+v", a)
	}
	if a := call(t, s, "editMessageText", id); a.OK || a.Description != "Bad Request: message to edit not found" {
		t.Fatalf("edit deleted: %+v", a)
	}
	if got := s.Posted(5); len(got) != 0 {
		t.Fatalf("posted after delete = %+v", got)
	}
}

func TestGetUpdatesConfirmsBelowOffsetAndWakesOnPush(t *testing.T) {
	s := New(t)
	u := User{ID: 42, FirstName: "Ann"}
	id1, _ := s.PushPrivate(u, "one")
	if n := s.Undelivered(); n != 1 {
		t.Fatalf("Undelivered before any poll = %d, want 1", n)
	}
	a := call(t, s, "getUpdates", url.Values{"timeout": {"10"}})
	var ups []struct {
		UpdateID int64 `json:"update_id"`
	}
	_ = json.Unmarshal(a.Result, &ups)
	if len(ups) != 1 || ups[0].UpdateID != id1 {
		t.Fatalf("first poll = %s", a.Result)
	}
	if p, n := s.Pending(), s.Undelivered(); p != 1 || n != 0 {
		t.Fatalf("after the first poll: Pending %d, Undelivered %d; want 1 (not confirmed) and 0 (delivered)", p, n)
	}
	done := make(chan answer)
	go func() {
		done <- call(t, s, "getUpdates", url.Values{"timeout": {"10"}, "offset": {itoa(id1 + 1)}})
	}()
	eventually(t, func() bool { return s.Pending() == 0 })
	id2, _ := s.PushPrivate(u, "two")
	select {
	case a = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("long poll did not wake on a new update")
	}
	_ = json.Unmarshal(a.Result, &ups)
	if len(ups) != 1 || ups[0].UpdateID != id2 {
		t.Fatalf("second poll = %s", a.Result)
	}
}

func TestFaultsAnswer429WithRetryAfterThenRecover(t *testing.T) {
	s := New(t)
	s.RateLimitStorm("sendMessage", 2, 3)
	p := url.Values{"chat_id": {"1"}, "text": {"x"}}
	for i := range 2 {
		a := call(t, s, "sendMessage", p)
		if a.ErrorCode != 429 || a.Parameters.RetryAfter != 3 {
			t.Fatalf("call %d: %+v", i, a)
		}
	}
	if a := call(t, s, "sendMessage", p); !a.OK {
		t.Fatalf("after storm: %+v", a)
	}
	if got := s.Count("sendMessage"); got != 3 {
		t.Fatalf("count = %d, want 3", got)
	}
}

// TestClearFaultsEndsAnOutage proves an outage begun with a large FailNext ends with
// ClearFaults for its method only.
func TestClearFaultsEndsAnOutage(t *testing.T) {
	s := New(t)
	s.FailNext("sendMessage", 1<<30, Fault{Status: 502})
	s.FailNext("editMessageText", 1, Fault{Status: 502})
	p := url.Values{"chat_id": {"1"}, "text": {"x"}}
	for range 3 {
		if a := call(t, s, "sendMessage", p); a.ErrorCode != 502 {
			t.Fatalf("during the outage: %+v", a)
		}
	}
	s.ClearFaults("sendMessage")
	if a := call(t, s, "sendMessage", p); !a.OK {
		t.Fatalf("after ClearFaults: %+v", a)
	}
	if a := call(t, s, "editMessageText", url.Values{"chat_id": {"1"}, "message_id": {"1"}, "text": {"y"}}); a.ErrorCode != 502 {
		t.Fatalf("another method's fault was cleared too: %+v", a)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not met within 5s")
		}
	}
}

func TestTakeUpdatesHandsOverQueuedUpdatesOnceInOrder(t *testing.T) {
	s := New(t)
	u := User{ID: 42, FirstName: "Ann"}
	id1, _ := s.PushPrivate(u, "one")
	id2, _ := s.PushPrivate(u, "two")
	got := s.TakeUpdates()
	var ids []int64
	for _, raw := range got {
		var up struct {
			UpdateID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &up); err != nil {
			t.Fatalf("update %s: %v", raw, err)
		}
		ids = append(ids, up.UpdateID)
	}
	if len(ids) != 2 || ids[0] != id1 || ids[1] != id2 {
		t.Fatalf("took updates %v, want [%d %d]", ids, id1, id2)
	}
	if s.Pending() != 0 || len(s.TakeUpdates()) != 0 {
		t.Fatal("taken updates are still queued")
	}
}

func TestPostedMessagesCarryTheirSendTime(t *testing.T) {
	s := New(t)
	before := time.Now()
	if a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"hi"}}); !a.OK {
		t.Fatalf("sendMessage: %+v", a)
	}
	posted := s.Posted(5)
	if len(posted) != 1 || posted[0].At.Before(before) || posted[0].At.After(time.Now()) {
		t.Fatalf("posted %+v, want one message stamped between the call's start and end", posted)
	}
}

func TestDelayHoldsTheMethodsAnswers(t *testing.T) {
	s := New(t)
	const d = 150 * time.Millisecond
	s.Delay("getMe", d)
	began := time.Now()
	if a := call(t, s, "getMe", nil); !a.OK {
		t.Fatalf("getMe: %+v", a)
	}
	if took := time.Since(began); took < d {
		t.Fatalf("delayed getMe answered after %v, want at least %v", took, d)
	}
	s.Delay("getMe", 0)
	began = time.Now()
	call(t, s, "getMe", nil)
	if took := time.Since(began); took >= d {
		t.Fatalf("getMe still delayed (%v) after the delay was removed", took)
	}
}

func TestPushVerbatimServesTheBytesAsTheyAreAndConfirmsByOffset(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"no update id", `{"message":{"text":"x"}}`},
		{"not an object", `"just a string"`},
		{"not json", `{"update_id":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			first, _ := s.PushPrivate(User{ID: 42, FirstName: "Ann"}, "one")
			id := s.PushVerbatim([]byte(tt.raw))
			if id != first+1 {
				t.Fatalf("verbatim update filed under %d, want the next id %d", id, first+1)
			}
			resp, err := http.PostForm(s.URL()+"/bot"+s.Token()+"/getUpdates", url.Values{"offset": {itoa(first)}})
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(strings.TrimSpace(string(body)), ","+tt.raw+"]}") {
				t.Fatalf("getUpdates answered %s, want the pushed bytes as its last element", body)
			}
			call(t, s, "getUpdates", url.Values{"offset": {itoa(id + 1)}})
			if n := s.Pending(); n != 0 {
				t.Fatalf("%d updates pending after an offset past the verbatim one", n)
			}
		})
	}
}

func TestSecondGetUpdatesEndsTheOneInFlightWithConflict(t *testing.T) {
	s := New(t)
	first := make(chan answer)
	go func() { first <- call(t, s, "getUpdates", url.Values{"timeout": {"10"}}) }()
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.poller != nil
	})
	second := make(chan answer)
	go func() { second <- call(t, s, "getUpdates", url.Values{"timeout": {"10"}}) }()
	var a answer
	select {
	case a = <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the first long poll was not ended by the second")
	}
	if a.OK || a.ErrorCode != 409 || !strings.Contains(a.Description, "terminated by other getUpdates request") {
		t.Fatalf("first poll answered %+v, want 409 Conflict: terminated by other getUpdates request", a)
	}
	u := User{ID: 42, FirstName: "Ann"}
	id, _ := s.PushPrivate(u, "to the newer poller")
	select {
	case a = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the second long poll did not wake on a new update")
	}
	var ups []struct {
		UpdateID int64 `json:"update_id"`
	}
	_ = json.Unmarshal(a.Result, &ups)
	if !a.OK || len(ups) != 1 || ups[0].UpdateID != id {
		t.Fatalf("second poll = %+v, want the update", a)
	}
	if n := s.Conflicts(); n != 1 {
		t.Fatalf("Conflicts = %d, want 1", n)
	}
	// One poll after another is no conflict.
	call(t, s, "getUpdates", url.Values{"offset": {itoa(id + 1)}})
	call(t, s, "getUpdates", url.Values{"offset": {itoa(id + 1)}})
	if n := s.Conflicts(); n != 1 {
		t.Fatalf("Conflicts = %d after sequential polls, want still 1", n)
	}
}
