package modelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const streamBody = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`

func post(t *testing.T, ctx context.Context, s *Server, path, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.RootURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads an SSE body into its data payloads, failing on any line that is not
// "data: …" followed by a blank line.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		payload, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an SSE data line", line)
		}
		out = append(out, payload)
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %q is not followed by a blank line", payload)
		}
	}
	return out
}

func TestStreamFramesLikeTheRealAPI(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{
		Reasoning: "thinking it over",
		Content:   "Hello, wörld — streamed.",
		ToolCalls: []ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris","unit":"c"}`},
			{Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
		},
		Usage: &Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
	})
	resp := post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	evs := events(t, resp.Body)
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event = %q, want [DONE]", evs[len(evs)-1])
	}
	var content, reasoning strings.Builder
	var contentChunks int
	args := map[int]string{}
	ids := map[int]string{}
	names := map[int]string{}
	var finish string
	var usage *Usage
	for _, ev := range evs[:len(evs)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "m" {
			t.Fatalf("chunk header wrong: %q", ev)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Fatalf("usage chunk has choices: %q", ev)
			}
			usage = c.Usage
			continue
		}
		d := c.Choices[0].Delta
		if d.Content != nil && *d.Content != "" {
			contentChunks++
			content.WriteString(*d.Content)
		}
		if d.ReasoningContent != nil {
			reasoning.WriteString(*d.ReasoningContent)
		}
		for _, tc := range d.ToolCalls {
			if tc.ID != "" {
				if tc.Function.Name == "" || tc.Function.Arguments != "" {
					t.Fatalf("first tool-call chunk should carry id and name only: %q", ev)
				}
				ids[tc.Index], names[tc.Index] = tc.ID, tc.Function.Name
			}
			args[tc.Index] += tc.Function.Arguments
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if contentChunks < 2 {
		t.Errorf("content came in %d chunks, want several", contentChunks)
	}
	if content.String() != "Hello, wörld — streamed." || reasoning.String() != "thinking it over" {
		t.Errorf("content %q reasoning %q", content.String(), reasoning.String())
	}
	if ids[0] != "call_a" || ids[1] == "" || names[0] != "get_weather" || names[1] != "get_time" {
		t.Errorf("tool call ids %v names %v", ids, names)
	}
	if args[0] != `{"city":"Paris","unit":"c"}` || args[1] != `{"tz":"Europe/Paris"}` {
		t.Errorf("arguments %v", args)
	}
	if finish != "tool_calls" {
		t.Errorf("finish = %q", finish)
	}
	if usage == nil || usage.TotalTokens != 7 {
		t.Errorf("usage = %+v", usage)
	}
}

func TestStreamWithoutIncludeUsageSendsNoUsageChunk(t *testing.T) {
	s := New(t)
	resp := post(t, context.Background(), s, "/chat/completions", "",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for _, ev := range events(t, resp.Body) {
		if strings.Contains(ev, `"usage"`) {
			t.Fatalf("unexpected usage in %q", ev)
		}
	}
}

func TestKeepAlivesPrecedeTheFirstChunk(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{KeepAlives: 2, Content: "x"})
	resp := post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(": keep-alive\n\n: keep-alive\n\ndata: {")) {
		t.Fatalf("body starts %q", b[:min(len(b), 60)])
	}
}

func TestNonStreamingAnswerIsOneCompletion(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{Content: "done", Reasoning: "r", ToolCalls: []ToolCall{{Name: "x", Arguments: "{}"}}})
	resp := post(t, context.Background(), s, "/v1/chat/completions", "",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	var c completion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	m := c.Choices[0].Message
	if c.Object != "chat.completion" || m.Content == nil || *m.Content != "done" || m.ReasoningContent != "r" ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].ID == "" || c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("completion = %+v", c)
	}
	if got := s.Requests()[0].Messages[0].Content; got != "hi" {
		t.Errorf("content parts flattened to %q", got)
	}
}

func TestFaultsAnswerWithStatusAndErrorBody(t *testing.T) {
	tests := []struct {
		name       string
		reply      Reply
		path, body string
		wantStatus int
		wantRetry  string
		wantInMsg  string
	}{
		{"rate limited with Retry-After", RateLimited("1"), "/v1/chat/completions", streamBody, 429, "1", "Rate limit"},
		{"server error", ServerError(), "/v1/chat/completions", streamBody, 500, "", "server had an error"},
		{"unauthorized quotes the key", Unauthorized(), "/v1/chat/completions", streamBody, 401, "", "sk-secret-123"},
		{"not found", NotFound(), "/chat/completions", streamBody, 404, "", "does not exist"},
		{"custom message", Reply{Status: 503, ErrorMessage: "busy"}, "/v1/chat/completions", streamBody, 503, "", "busy"},
		{"unknown path", Reply{}, "/v1/models", streamBody, 404, "", "Unknown request URL"},
		{"malformed body", Reply{}, "/v1/chat/completions", `{"model":`, 400, "", "not a JSON request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			s.Enqueue(tt.reply)
			resp := post(t, context.Background(), s, tt.path, "Bearer sk-secret-123", tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
			}
			var e apiError
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(e.Error.Message, tt.wantInMsg) {
				t.Errorf("message %q does not contain %q", e.Error.Message, tt.wantInMsg)
			}
		})
	}
}

func TestHangEndsWhenTheClientGoesAway(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
	}{
		{"before the answer", Hang()},
		{"mid-stream", Reply{Content: "some words here", HangMidStream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			s.Enqueue(tt.reply)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(streamBody))
				resp, err := s.Client().Do(req)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			waitFor(t, func() bool { return s.Count() == 1 })
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}

func TestCloseEndsHangingRequests(t *testing.T) {
	s := Start()
	s.Enqueue(Hang())
	done := make(chan error, 1)
	go func() {
		resp, err := s.Client().Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(streamBody))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, func() bool { return s.Count() == 1 })
	s.Close()
	s.Close() // idempotent
	<-done
}

func TestDropMidStreamCutsTheConnection(t *testing.T) {
	s := New(t)
	s.Enqueue(Reply{Content: "a long enough answer", DropMidStream: true})
	resp := post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	b, err := io.ReadAll(resp.Body)
	if err == nil || bytes.Contains(b, []byte("[DONE]")) {
		t.Fatalf("stream ended cleanly (err %v): %s", err, b)
	}
}

func TestRepliesComeFromQueueThenFuncThenFallback(t *testing.T) {
	s := New(t)
	s.Enqueue(Text("first"))
	var seen []string
	call := func() string {
		resp := post(t, context.Background(), s, "/v1/chat/completions", "",
			`{"model":"m","messages":[{"role":"user","content":"q"}]}`)
		var c completion
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return *c.Choices[0].Message.Content
	}
	seen = append(seen, call())
	s.SetFunc(func(r Request) Reply { return Text("fn:" + r.LastUserText()) })
	seen = append(seen, call())
	s.SetFunc(nil)
	seen = append(seen, call())
	if strings.Join(seen, ",") != "first,fn:q,ok" {
		t.Fatalf("answers = %v", seen)
	}
	if s.Pending() != 0 {
		t.Errorf("Pending = %d", s.Pending())
	}
}

func TestRecordsDecodedRequestsAndCounts(t *testing.T) {
	s := New(t)
	post(t, context.Background(), s, "/v1/chat/completions", "Bearer k", `{"model":"m","max_tokens":5,
		"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}],
		"messages":[{"role":"system","content":"sys"},{"role":"assistant","content":null,
		"tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"res"}]}`)
	post(t, context.Background(), s, "/v1/chat/completions", "", `not json`)
	s.SetRecording(false)
	post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	if s.Count() != 3 {
		t.Errorf("Count = %d, want 3", s.Count())
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Authorization != "Bearer k" || r.MaxTokens != 5 || len(r.Tools) != 1 || r.Tools[0].Function.Name != "t" ||
		r.Messages[1].ToolCalls[0].ID != "c1" || r.Messages[2].ToolCallID != "c1" || r.Received.IsZero() {
		t.Fatalf("recorded %+v", r)
	}
	reqs[0].Messages[0].Content = "changed"
	if s.Requests()[0].Messages[0].Content != "sys" {
		t.Error("Requests returned a shared copy")
	}
}

func TestRecordsTheImagePartsOfAMessage(t *testing.T) {
	s := New(t)
	post(t, context.Background(), s, "/v1/chat/completions", "", `{"model":"m","messages":[
		{"role":"system","content":"sys"},
		{"role":"user","content":[
			{"type":"text","text":"what is "},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,AAECAwQ="}},
			{"type":"text","text":"this?"},
			{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg","detail":"low"}},
			{"type":"image_url","image_url":{"url":"data:image/webp;base64,"}}]},
		{"role":"user","content":"plain"}]}`)
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	m := reqs[0].Messages[1]
	want := []Image{{MIME: "image/png", Size: 5}, {URL: "https://example.com/cat.jpg"}, {MIME: "image/webp", Size: 0}}
	if m.Content != "what is this?" || !reflect.DeepEqual(m.Images, want) {
		t.Fatalf("message = %+v, want the text %q and images %+v", m, "what is this?", want)
	}
	if reqs[0].Messages[0].Images != nil || reqs[0].Messages[2].Images != nil {
		t.Errorf("messages without image parts recorded images: %+v", reqs[0].Messages)
	}
	reqs[0].Messages[1].Images[0].MIME = "changed"
	if s.Requests()[0].Messages[1].Images[0].MIME != "image/png" {
		t.Error("Requests returned a shared copy of the images")
	}
}

func TestAPIKeyIsRequiredOnceSet(t *testing.T) {
	s := New(t)
	s.SetAPIKey("sk-right")
	tests := []struct {
		name, auth string
		want       int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"another key", "Bearer sk-wrong", http.StatusUnauthorized},
		{"the key without Bearer", "sk-right", http.StatusUnauthorized},
		{"the key", "Bearer sk-right", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, context.Background(), s, "/v1/chat/completions", tt.auth, streamBody)
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want != http.StatusUnauthorized {
				return
			}
			var e apiError
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if e.Error.Code != "invalid_api_key" || !strings.Contains(e.Error.Message, strings.TrimPrefix(tt.auth, "Bearer ")) {
				t.Errorf("error body %+v does not quote the presented key", e.Error)
			}
		})
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("recorded %d requests, want only the authorized one", n)
	}
	s.SetAPIKey("")
	if resp := post(t, context.Background(), s, "/v1/chat/completions", "", streamBody); resp.StatusCode != http.StatusOK {
		t.Errorf("status = %d once the key was removed", resp.StatusCode)
	}
}

func TestLatencyDelaysTheAnswer(t *testing.T) {
	s := New(t)
	s.SetLatency(30 * time.Millisecond)
	s.Enqueue(Reply{Latency: 20 * time.Millisecond})
	start := time.Now()
	post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("answered after %v, want at least 50ms", el)
	}
}

func TestDoneIsCalledAfterTheLastByte(t *testing.T) {
	s := New(t)
	done := make(chan time.Time, 1)
	s.Enqueue(Reply{Content: "a streamed answer", ChunkSize: 4, ChunkDelay: 5 * time.Millisecond,
		Done: func() { done <- time.Now() }})
	resp := post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	body, _ := io.ReadAll(resp.Body)
	read := time.Now()
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("body %q", body)
	}
	select {
	case at := <-done:
		if at.After(read) {
			t.Errorf("Done was called after the client had read the whole answer")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Done was not called")
	}
}

func TestGapsAreMeasuredBetweenRequests(t *testing.T) {
	s := New(t)
	post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	post(t, context.Background(), s, "/v1/chat/completions", "", streamBody)
	g := s.Gaps()
	if len(g) != 1 || g[0] <= 0 {
		t.Fatalf("Gaps = %v", g)
	}
}

func TestDecodeRequestRejectsMalformedInput(t *testing.T) {
	tests := []struct{ name, body string }{
		{"empty", ``},
		{"not an object", `[1,2]`},
		{"truncated", `{"model":"m","messages":[`},
		{"trailing data", `{"model":"m","messages":[{"role":"user","content":"x"}]} {}`},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`},
		{"no messages", `{"model":"m","messages":[]}`},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`},
		{"content is a number", `{"model":"m","messages":[{"role":"user","content":5}]}`},
		{"content parts malformed", `{"model":"m","messages":[{"role":"user","content":[{"type":1}]}]}`},
		{"stream is a string", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`},
		{"image part without image_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`},
		{"image url neither http nor data", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`},
		{"image data not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!"}}]}]}`},
		{"image data URL without base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`},
		{"data URL of a non-image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,YQ=="}}]}]}`},
		{"image in an assistant message", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,YQ=="}}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeRequest([]byte(tt.body)); !errors.Is(err, errBadRequest) {
				t.Fatalf("err = %v, want errBadRequest", err)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(streamBody))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":null}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRequest(body)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if req.Model == "" || len(req.Messages) == 0 {
			t.Fatalf("accepted an incomplete request %+v", req)
		}
		// Decoding the messages in the same pass (wireMessage) reads what decoding into Request
		// (Message.UnmarshalJSON) reads.
		var want Request
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("decodeRequest accepted what json.Unmarshal refuses (%v)", err)
		}
		if !reflect.DeepEqual(req, want) {
			t.Fatalf("decodeRequest = %+v, json.Unmarshal = %+v", req, want)
		}
	})
}

func TestDecodeRequestReadsTheLeadsRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/lead_request.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := decodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	var want Request
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req, want) || len(req.Tools) != 2 || req.LastUserText() != "m0 c0" || !req.Stream {
		t.Fatalf("decodeRequest = %+v, want %+v", req, want)
	}
}

func TestSplitKeepsUTF8SequencesWhole(t *testing.T) {
	tests := []struct {
		name string
		s    string
		size int
	}{
		{"ascii", "abcdefghij", 3},
		{"multibyte", "héllo wörld ☃☃☃ ok", 2},
		{"shorter than size", "hi", 8},
		{"empty", "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := split(tt.s, tt.size)
			if strings.Join(parts, "") != tt.s {
				t.Fatalf("parts %q do not rejoin to %q", parts, tt.s)
			}
			for _, p := range parts {
				if !utf8.ValidString(p) || p == "" {
					t.Fatalf("bad part %q", p)
				}
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, "the condition", cond)
}

func BenchmarkStreamedReply(b *testing.B) {
	s := Start()
	defer s.Close()
	s.SetRecording(false)
	s.SetFunc(func(Request) Reply { return Text("The quick brown fox jumps over the lazy dog.") })
	client := s.Client()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(streamBody))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkDecodeRequest decodes a request as the lead sends it (its system prompt, one user
// message and its two tools): the fake's own cost per model call under load.
func BenchmarkDecodeRequest(b *testing.B) {
	body, err := os.ReadFile("testdata/lead_request.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWordsCountsAsStringsFields(t *testing.T) {
	for _, s := range []string{"", " ", "one", " two  words ", "tabs\tand\nlines", "ünï cödé\u00a0nbsp", "\u2003em\u2003space "} {
		if got, want := words(s), len(strings.Fields(s)); got != want {
			t.Errorf("words(%q) = %d, strings.Fields has %d", s, got, want)
		}
	}
}

func TestAppendChunkIsJSONMarshal(t *testing.T) {
	s, stop, html := "text <b>&</b> \u2028 \"quoted\" \\ \x01", "stop", "<&>"
	base := chunk{ID: "chatcmpl-fake-1", Object: "chat.completion.chunk", Created: created, Model: "m" + html, SystemFingerprint: "fp_fake"}
	with := func(cs []chunkChoice, u *Usage) chunk { c := base; c.Choices, c.Usage = cs, u; return c }
	for _, c := range []chunk{
		base,
		with([]chunkChoice{}, &Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}),
		with([]chunkChoice{{Delta: chunkDelta{Role: "assistant", Content: new(string)}, Logprobs: jsonNull}}, nil),
		with([]chunkChoice{{Delta: chunkDelta{Content: &s}, Logprobs: jsonNull}}, nil),
		with([]chunkChoice{{Delta: chunkDelta{ReasoningContent: &s}}}, nil),
		with([]chunkChoice{{Delta: chunkDelta{}, Logprobs: jsonNull, FinishReason: &stop}}, nil),
		with([]chunkChoice{{Index: 2, Delta: chunkDelta{ToolCalls: []chunkToolCall{
			{Index: 0, ID: "call_1", Type: "function", Function: chunkFunction{Name: "delegate"}},
			{Index: 1, Function: chunkFunction{Arguments: `{"task":"<x>"}`}},
		}}, Logprobs: jsonNull}}, nil),
	} {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendChunk(nil, &c); string(got) != string(want) {
			t.Errorf("appendChunk:\n got %s\nwant %s", got, want)
		}
	}
}

func FuzzAppendChunk(f *testing.F) {
	f.Add("chatcmpl-1", "m", "hello", "delegate", `{"a":1}`, 3)
	f.Add("", "", "\xff<\u2028>", "", "", 0)
	f.Fuzz(func(t *testing.T, id, model, text, name, args string, index int) {
		finish := text
		c := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, SystemFingerprint: "fp_fake",
			Choices: []chunkChoice{
				{Index: index, Delta: chunkDelta{Role: name, Content: &text, ReasoningContent: &args}, Logprobs: jsonNull, FinishReason: &finish},
				{Delta: chunkDelta{ToolCalls: []chunkToolCall{{Index: index, ID: id, Type: model, Function: chunkFunction{Name: name, Arguments: args}}}}},
			}, Usage: &Usage{PromptTokens: index, TotalTokens: -index}}
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendChunk(nil, &c); string(got) != string(want) {
			t.Fatalf("appendChunk:\n got %s\nwant %s", got, want)
		}
	})
}
