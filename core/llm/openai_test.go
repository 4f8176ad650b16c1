package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

const testKey = "sk-test-SECRET-0123456789"

// checkLeaks fails t if goroutines outlive it. Registered first, so it runs after every other
// cleanup (the fake server's Close included).
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// newFake starts a fake server and a provider pointed at it, with tiny backoffs.
func newFake(t *testing.T, mutate func(*OpenAIOptions)) (*modelserver.Server, *OpenAI) {
	t.Helper()
	checkLeaks(t)
	s := modelserver.New(t)
	opts := OpenAIOptions{BaseURL: s.BaseURL(), APIKey: testKey, HTTPClient: s.Client(),
		RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// collect gathers the deltas of one call.
type collect struct{ content, reasoning []string }

func (c *collect) on(d Delta) {
	if d.Content != "" {
		c.content = append(c.content, d.Content)
	}
	if d.Reasoning != "" {
		c.reasoning = append(c.reasoning, d.Reasoning)
	}
}

func userRequest(text string) Request {
	return Request{System: []string{"You are terse.", "Answer in English."}, Messages: []Message{{Role: RoleUser, Content: text}}}
}

func TestOpenAIStreamsTextInOrder(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{Content: "Hello there, this arrives in pieces.", ChunkSize: 5})
	var c collect
	resp, err := p.Stream(context.Background(), userRequest("hi"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.content) < 3 || strings.Join(c.content, "") != "Hello there, this arrives in pieces." {
		t.Fatalf("deltas = %q", c.content)
	}
	if resp.Content != "Hello there, this arrives in pieces." || resp.Finish != FinishStop || len(resp.ToolCalls) != 0 {
		t.Fatalf("response = %+v", resp)
	}
	got := s.Requests()[0]
	if got.Model != DefaultModel || got.Authorization != "Bearer "+testKey || !got.Stream ||
		got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Fatalf("request = %+v", got)
	}
	if got.Messages[0].Role != "system" || got.Messages[0].Content != "You are terse.\n\nAnswer in English." ||
		got.Messages[1].Content != "hi" {
		t.Fatalf("messages = %+v", got.Messages)
	}
}

func TestOpenAIToleratesDeepSeekKeepAliveComments(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{KeepAlives: 500, Content: "after a long wait"})
	resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if err != nil || resp.Content != "after a long wait" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

func TestOpenAIAssemblesToolCallsSplitAcrossChunks(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{ChunkSize: 3, ToolCalls: []modelserver.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","days":3}`},
		{ID: "call_2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}})
	resp, err := p.Stream(context.Background(), userRequest("weather and time"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","days":3}`},
		{ID: "call_2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != want[0] || resp.ToolCalls[1] != want[1] {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	if resp.Finish != FinishToolCalls {
		t.Fatalf("finish = %q", resp.Finish)
	}
}

func TestOpenAIMergesToolPiecesByIndex(t *testing.T) {
	idx := func(i int) *int { return &i }
	var a accumulator
	for _, tc := range []struct {
		index *int
		id    string
		name  string
		args  string
	}{
		{idx(0), "a", "first", ""},
		{idx(1), "b", "second", `{"y"`},
		{idx(0), "", "", `{"x":`},
		{idx(1), "", "", `:2}`},
		{idx(0), "", "", `1}`},
		{nil, "c", "third", `{}`}, // a server without indexes
	} {
		a.toolPiece(openaiToolCall(tc.index, tc.id, tc.name, tc.args))
	}
	r := a.response()
	got, _ := json.Marshal(r.ToolCalls)
	want := `[{"id":"a","name":"first","arguments":"{\"x\":1}"},{"id":"b","name":"second","arguments":"{\"y\":2}"},{"id":"c","name":"third","arguments":"{}"}]`
	if string(got) != want {
		t.Fatalf("calls = %s\nwant    %s", got, want)
	}
}

func TestOpenAIKeepsReasoningApartFromContent(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{Reasoning: "Let me think step by step.", Content: "The answer is 4."})
	var c collect
	resp, err := p.Stream(context.Background(), userRequest("2+2?"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "Let me think step by step." || resp.Content != "The answer is 4." {
		t.Fatalf("response = %+v", resp)
	}
	if strings.Join(c.reasoning, "") != resp.Reasoning || strings.Join(c.content, "") != resp.Content {
		t.Fatalf("deltas mixed: content %q reasoning %q", c.content, c.reasoning)
	}
}

func TestOpenAIReportsUsageFromTheUsageChunk(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{Content: "ok", Usage: &modelserver.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}})
	resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != (Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
}

func TestOpenAINormalizesFinishReasons(t *testing.T) {
	tests := []struct {
		name  string
		reply modelserver.Reply
		want  FinishReason
	}{
		{"stop", modelserver.Reply{Content: "x"}, FinishStop},
		{"length", modelserver.Reply{Content: "x", Finish: "length"}, FinishLength},
		{"content filter", modelserver.Reply{Finish: "content_filter"}, FinishRefusal},
		{"deepseek out of resources", modelserver.Reply{Content: "x", Finish: "insufficient_system_resource"}, FinishLength},
		{"stop after tool calls", modelserver.Reply{Finish: "stop", ToolCalls: []modelserver.ToolCall{{Name: "t", Arguments: "{}"}}}, FinishToolCalls},
		{"legacy function_call", modelserver.Reply{Finish: "function_call", ToolCalls: []modelserver.ToolCall{{Name: "t"}}}, FinishToolCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newFake(t, nil)
			s.Enqueue(tt.reply)
			resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Finish != tt.want {
				t.Fatalf("finish = %q, want %q", resp.Finish, tt.want)
			}
		})
	}
}

func TestOpenAISendsHistoryToolsAndLimits(t *testing.T) {
	s, _ := newFake(t, nil)
	// DeepSeek-style base URL (no /v1), no key (a local server), a default model the request overrides.
	p, err := NewOpenAI(OpenAIOptions{BaseURL: s.RootURL(), HTTPClient: s.Client(), Model: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{
		Model:     "m2",
		MaxTokens: 64,
		Messages: []Message{
			{Role: RoleUser, Content: "weather?"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: RoleTool, ToolCallID: "c1"},
		},
		Tools: []ToolSpec{
			{Name: "get_weather", Description: "Weather by city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			{Name: "no_params"},
		},
	}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := s.Requests()[0]
	if got.Path != "/chat/completions" || got.Model != "m2" || got.MaxTokens != 64 || got.Authorization != "" {
		t.Fatalf("request = %+v", got)
	}
	if len(got.Messages) != 3 || got.Messages[1].ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` ||
		got.Messages[2].ToolCallID != "c1" || got.Messages[2].Content != "(no output)" {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if len(got.Tools) != 2 || got.Tools[0].Function.Name != "get_weather" ||
		!strings.Contains(string(got.Tools[1].Function.Parameters), `"object"`) {
		t.Fatalf("tools = %+v", got.Tools)
	}
}

func TestOpenAIRetriesOn429HonouringRetryAfter(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.RateLimited("1"), modelserver.Text("finally"))
	resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "finally" || s.Count() != 2 {
		t.Fatalf("content %q after %d requests", resp.Content, s.Count())
	}
	if gap := s.Gaps()[0]; gap < time.Second {
		t.Fatalf("server saw the retry %v after the 429, want at least the 1s Retry-After", gap)
	}
}

// sleepRecorder replaces the provider's sleep: it records the waits and does not wait.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *sleepRecorder) install(p *OpenAI) {
	p.sleep = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
		return ctx.Err()
	}
}

func TestOpenAIRetryAfterFormsAndCap(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		wantMin    time.Duration
		wantMax    time.Duration
		wantRetry  bool
	}{
		{"delay seconds", "2", 2 * time.Second, 2 * time.Second, true},
		{"http date", time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat), 2 * time.Second, 4 * time.Second, true},
		{"beyond the cap is not waited for", "120", 0, 0, false},
		{"malformed falls back to backoff", "soon", 0, time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newFake(t, nil)
			var rec sleepRecorder
			rec.install(p)
			s.Enqueue(modelserver.RateLimited(tt.retryAfter), modelserver.Text("ok"))
			_, err := p.Stream(context.Background(), userRequest("hi"), nil)
			if !tt.wantRetry {
				var se *StatusError
				if !errors.As(err, &se) || se.StatusCode != 429 || se.RetryAfter != 120*time.Second {
					t.Fatalf("err = %v, want a 429 StatusError with RetryAfter 120s", err)
				}
				if s.Count() != 1 || len(rec.waits) != 0 {
					t.Fatalf("%d requests, waits %v: want no retry", s.Count(), rec.waits)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Count() != 2 || len(rec.waits) != 1 || rec.waits[0] < tt.wantMin || rec.waits[0] > tt.wantMax {
				t.Fatalf("%d requests, waits %v, want one in [%v, %v]", s.Count(), rec.waits, tt.wantMin, tt.wantMax)
			}
		})
	}
}

func TestOpenAIRetriesServerErrorThenSucceeds(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.ServerError(), modelserver.Reply{Status: 503}, modelserver.Text("recovered"))
	resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if err != nil || resp.Content != "recovered" || s.Count() != 3 {
		t.Fatalf("resp %+v err %v after %d requests", resp, err, s.Count())
	}
}

func TestOpenAIGivesUpAfterMaxRetriesWithStatusError(t *testing.T) {
	s, p := newFake(t, func(o *OpenAIOptions) { o.MaxRetries = 2 })
	s.SetFunc(func(modelserver.Request) modelserver.Reply { return modelserver.ServerError() })
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 500 {
		t.Fatalf("err = %v, want *StatusError 500", err)
	}
	if s.Count() != 3 {
		t.Fatalf("%d requests, want 1 + 2 retries", s.Count())
	}
}

func TestOpenAINoRetriesWhenDisabled(t *testing.T) {
	s, p := newFake(t, func(o *OpenAIOptions) { o.MaxRetries = -1 })
	s.Enqueue(modelserver.ServerError(), modelserver.Text("never"))
	if _, err := p.Stream(context.Background(), userRequest("hi"), nil); err == nil || s.Count() != 1 {
		t.Fatalf("err %v after %d requests, want a failure after 1", err, s.Count())
	}
}

func TestOpenAIClassifiesAuthAndNotFoundWithoutTheKey(t *testing.T) {
	tests := []struct {
		name  string
		reply modelserver.Reply
		want  error
	}{
		{"401", modelserver.Unauthorized(), ErrAuth},
		{"403 quoting the key", modelserver.Reply{Status: 403, ErrorMessage: "key " + testKey + " is banned"}, ErrAuth},
		{"404 quoting the key", modelserver.Reply{Status: 404, ErrorMessage: "no model for " + testKey}, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newFake(t, nil)
			s.Enqueue(tt.reply, modelserver.Text("must not be reached"))
			_, err := p.Stream(context.Background(), userRequest("hi"), nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error reveals the key: %v", err)
			}
			if s.Count() != 1 {
				t.Fatalf("%d requests: auth and not-found must not be retried", s.Count())
			}
		})
	}
}

func TestOpenAIKeepsTheKeyOutOfRetryLogsAndErrors(t *testing.T) {
	var logs bytes.Buffer
	s, p := newFake(t, func(o *OpenAIOptions) {
		o.MaxRetries = 1
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	s.SetFunc(func(r modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Status: 500, ErrorMessage: "upstream rejected " + strings.TrimPrefix(r.Authorization, "Bearer ")}
	})
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry was logged: %s", logs.String())
	}
	for what, text := range map[string]string{"error": err.Error(), "logs": logs.String()} {
		if strings.Contains(text, testKey) {
			t.Errorf("%s reveal the key: %s", what, text)
		}
	}
}

func TestOpenAIHangEndsPromptlyWhenCancelled(t *testing.T) {
	tests := []struct {
		name  string
		reply modelserver.Reply
	}{
		{"before the answer", modelserver.Hang()},
		{"mid-stream", modelserver.Reply{Content: "partial answer here", HangMidStream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newFake(t, nil)
			s.Enqueue(tt.reply)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := p.Stream(ctx, userRequest("hi"), nil)
				errc <- err
			}()
			waitUntil(t, func() bool { return s.Count() == 1 })
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if s.Count() != 1 {
				t.Fatalf("%d requests: a cancelled call must not retry", s.Count())
			}
		})
	}
}

func TestOpenAITimeoutEndsAHang(t *testing.T) {
	s, p := newFake(t, func(o *OpenAIOptions) { o.Timeout = 50 * time.Millisecond })
	s.Enqueue(modelserver.Hang())
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

func TestOpenAIDoesNotRetryOnceContentStreamed(t *testing.T) {
	s, p := newFake(t, nil)
	s.Enqueue(modelserver.Reply{Content: "first words then the line drops", DropMidStream: true}, modelserver.Text("retried"))
	var c collect
	_, err := p.Stream(context.Background(), userRequest("hi"), c.on)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a transport error", err)
	}
	if len(c.content) == 0 || s.Count() != 1 {
		t.Fatalf("deltas %q, %d requests: want content seen and no retry", c.content, s.Count())
	}
}

func TestOpenAIRetriesConnectionErrorsBeforeContent(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every attempt is refused
	p, err := NewOpenAI(OpenAIOptions{BaseURL: "http://" + addr + "/v1", APIKey: testKey, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	var rec sleepRecorder
	rec.install(p)
	_, err = p.Stream(context.Background(), userRequest("hi"), nil)
	var se *StatusError
	if err == nil || errors.As(err, &se) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v, want a transport error without the key", err)
	}
	if len(rec.waits) != 2 {
		t.Fatalf("waited %d times, want 2 retries", len(rec.waits))
	}
}

func TestNewOpenAIRejectsBadBaseURLs(t *testing.T) {
	for _, u := range []string{"api.deepseek.com", "ftp://x", "http://", "://bad", "https//x"} {
		t.Run(u, func(t *testing.T) {
			if _, err := NewOpenAI(OpenAIOptions{BaseURL: u}); err == nil {
				t.Fatalf("accepted %q", u)
			}
		})
	}
	p, err := NewOpenAI(OpenAIOptions{})
	if err != nil || p.opts.BaseURL != DefaultBaseURL || p.opts.Model != DefaultModel || p.Name() != "openai" {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), maxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1e3", 0, false},
		{"1.2.3", 0, false},
		{".", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"soon", 0, false},
		{"Tue, 99 Foo 2026", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "", "-3", "1e9", "NaN"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", v, d, ok)
		}
	})
}

func TestBackoffDoublesWithinJitterAndCap(t *testing.T) {
	base, limit := 100*time.Millisecond, time.Second
	for attempt, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 50 {
			if d := backoff(attempt, base, limit); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", attempt, d, full/2, full)
			}
		}
	}
}

func openaiToolCall(index *int, id, name, args string) openai.ToolCall {
	return openai.ToolCall{Index: index, ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, "the condition", cond)
}

func BenchmarkOpenAIStream(b *testing.B) {
	s := modelserver.Start()
	defer s.Close()
	s.SetRecording(false)
	s.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: "The quick brown fox jumps over the lazy dog, twice over.",
			ToolCalls: []modelserver.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"query":"fox","limit":3}`}}}
	})
	p, err := NewOpenAI(OpenAIOptions{BaseURL: s.BaseURL(), APIKey: testKey, HTTPClient: s.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := userRequest("tell me about foxes")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(ctx, req, func(Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// writeCounter counts the writes made on the connections it dialled.
type writeCounter struct {
	mu     sync.Mutex
	writes int
}

type countedConn struct {
	net.Conn
	n *writeCounter
}

func (c countedConn) Write(b []byte) (int, error) {
	c.n.mu.Lock()
	c.n.writes++
	c.n.mu.Unlock()
	return c.Conn.Write(b)
}

// A request is written to the connection in one write, headers and body together: the body
// is one net/http knows is in memory, so it does not flush the headers on their own first.
func TestOpenAIWritesEachRequestInOneWrite(t *testing.T) {
	n := &writeCounter{}
	s, p := newFake(t, func(o *OpenAIOptions) {
		var d net.Dialer
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countedConn{c, n}, nil
		}}}
	})
	t.Cleanup(p.opts.HTTPClient.CloseIdleConnections)
	const calls = 3
	for range calls {
		if _, err := p.Stream(context.Background(), userRequest(strings.Repeat("a long question ", 100)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if s.Count() != calls {
		t.Fatalf("server saw %d requests, want %d", s.Count(), calls)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.writes != calls {
		t.Fatalf("%d writes for %d requests, want one each", n.writes, calls)
	}
}
