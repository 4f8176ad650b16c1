package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// goOpenAIRequest is req in go-openai's own request type, as the provider built it before it
// encoded bodies itself: the reference wireBody must encode to the same bytes as.
func goOpenAIRequest(req Request, model string) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages)+1)
	var sections []string
	for _, s := range req.System {
		if strings.TrimSpace(s) != "" {
			sections = append(sections, s)
		}
	}
	if len(sections) > 0 {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: strings.Join(sections, "\n\n")})
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		if m.Role == RoleTool && om.Content == "" {
			om.Content = "(no output)"
		}
		if m.Role == RoleUser && len(m.Images) > 0 {
			if om.Content != "" {
				om.MultiContent = append(om.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: om.Content})
			}
			om.Content = ""
			for _, img := range m.Images {
				om.MultiContent = append(om.MultiContent, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
					ImageURL: &openai.ChatMessageImageURL{URL: "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}})
			}
		}
		msgs = append(msgs, om)
	}
	creq := openai.ChatCompletionRequest{Model: model, Messages: msgs, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
	//lint:ignore SA1019 the provider sends max_tokens.
	creq.MaxTokens = req.MaxTokens
	for _, t := range req.Tools {
		var params any = t.Parameters
		if len(t.Parameters) == 0 {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		creq.Tools = append(creq.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return creq
}

// checkWireBody fails t unless the provider encodes req to the bytes go-openai encodes it to.
func checkWireBody(t *testing.T, p *OpenAI, req Request) {
	t.Helper()
	model := req.Model
	if model == "" {
		model = p.opts.Model
	}
	got, err := p.wireBody(req, model)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(goOpenAIRequest(req, model))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("wire body differs from go-openai's encoding\n got %s\nwant %s", got, want)
	}
}

func newWireProvider(t testing.TB) *OpenAI {
	t.Helper()
	p, err := NewOpenAI(OpenAIOptions{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWireBodyIsGoOpenAIEncoding(t *testing.T) {
	schema := json.RawMessage(benchSchema)
	tests := []struct {
		name string
		req  Request
	}{
		{"empty", Request{}},
		{"model and max tokens", Request{Model: "m2", MaxTokens: 64, Messages: []Message{{Role: RoleUser, Content: "hi"}}}},
		{"system sections, blank ones dropped", Request{System: []string{"one", "  ", "two\nlines", ""}, Messages: []Message{{Role: RoleUser, Content: "x"}}}},
		{"only blank system sections", Request{System: []string{" ", "\n"}}},
		{"system without messages", Request{System: []string{"alone"}}},
		{"the bench request", benchRequest()},
		{"tool calls and results", Request{Messages: []Message{
			{Role: RoleUser, Content: "weather?"},
			{Role: RoleAssistant, Content: "let me look", ToolCalls: []ToolCall{
				{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
				{ID: "", Name: "no_id", Arguments: ""},
				{ID: "c3", Name: "", Arguments: "{}"},
				{},
			}},
			{Role: RoleTool, ToolCallID: "c1"},
			{Role: RoleTool, ToolCallID: "c3", Content: "result <b>&amp;</b>"},
		}}},
		{"escapes", Request{System: []string{"tab\there \"quoted\" back\\slash \x00\x01\x1f\x7f \b\f\r"},
			Messages: []Message{
				{Role: RoleUser, Content: "<script>alert('x')</script> & more"},
				{Role: RoleUser, Content: "line\u2028sep\u2029para ünïcödé 日本語 🦊"},
				{Role: RoleUser, Content: "bad utf8 \xff\xfe \xe2\x82 end \xc3"},
				{Role: "custom-role", Content: "x"},
			}}},
		{"a user message with text and images", Request{Messages: []Message{
			{Role: RoleUser, Content: "what is <this>?", Images: []Image{{MIME: "image/png", Data: pngPixel}, {MIME: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10}}}},
			{Role: RoleAssistant, Content: "a pixel"},
			{Role: RoleUser, Content: "and now?"},
		}}},
		{"a user message with an image and no text", Request{Messages: []Message{{Role: RoleUser, Images: []Image{{MIME: "image/gif", Data: []byte("GIF89a")}}}}}},
		{"images of every base64 padding", Request{Messages: []Message{{Role: RoleUser, Content: "x", Images: []Image{
			{MIME: "image/webp", Data: []byte{1}}, {MIME: "image/webp", Data: []byte{1, 2}}, {MIME: "image/webp", Data: []byte{1, 2, 3}}, {MIME: "image/webp"}}}}}},
		{"tools", Request{Messages: []Message{{Role: RoleUser, Content: "x"}}, Tools: []ToolSpec{
			{Name: "ask", Description: "Ask <the> user & wait.", Parameters: schema},
			{Name: "no_params"},
			{Name: "empty_params", Parameters: json.RawMessage{}},
			{Name: "html_in_schema", Parameters: json.RawMessage(`{"description":"a<b & c>d"}`)},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newWireProvider(t)
			checkWireBody(t, p, tt.req)
			checkWireBody(t, p, tt.req) // again, with the tools cached
		})
	}
}

// pngPixel is a whole 1×1 PNG.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func TestWireBodyMessagesWithoutImagesAreUnchanged(t *testing.T) {
	p := newWireProvider(t)
	plain := Request{Messages: []Message{{Role: RoleUser, Content: "hi"}, {Role: RoleAssistant, Content: "hello"}}}
	got, err := p.wireBody(plain, "m")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],"stream":true,"stream_options":{"include_usage":true}}`
	if string(got) != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	// Images on a message that is not the user's are not sent: the API refuses them there.
	withImages := plain.Clone()
	withImages.Messages[1].Images = []Image{{MIME: "image/png", Data: pngPixel}}
	if got2, _ := p.wireBody(withImages, "m"); string(got2) != want {
		t.Fatalf("an assistant message's images were encoded:\n%s", got2)
	}
}

func TestWireBodyEncodesImagesAsContentParts(t *testing.T) {
	p := newWireProvider(t)
	req := Request{Messages: []Message{{Role: RoleUser, Content: "look", Images: []Image{{MIME: "image/png", Data: []byte{0xfb, 0xff}}}}}}
	got, err := p.wireBody(req, "m")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,+/8="}}]}`
	if !strings.Contains(string(got), want) {
		t.Fatalf("body\n%s\ndoes not hold\n%s", got, want)
	}
}

func TestWireBodyEncodesImagesWithoutCopies(t *testing.T) {
	p := newWireProvider(t)
	req := Request{System: []string{"s"}, Messages: []Message{{Role: RoleUser, Content: "look",
		Images: []Image{{MIME: "image/png", Data: make([]byte, 1<<20)}, {MIME: "image/jpeg", Data: pngPixel}}}}}
	// The body is sized up front and the base64 written into it: one allocation, the body.
	if n := testing.AllocsPerRun(5, func() { _, _ = p.wireBody(req, "m") }); n != 1 {
		t.Fatalf("%v allocations per body, want 1", n)
	}
}

func TestOpenAISendsImagesTheServerReads(t *testing.T) {
	s, p := newFake(t, nil)
	req := userRequest("what is in the picture?")
	req.Messages[0].Images = []Image{{MIME: "image/png", Data: pngPixel}, {MIME: "image/jpeg", Data: bytes.Repeat([]byte{7}, 1000)}}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	m := s.Requests()[0].Messages[1]
	want := []modelserver.Image{{MIME: "image/png", Size: len(pngPixel)}, {MIME: "image/jpeg", Size: 1000}}
	if m.Content != "what is in the picture?" || len(m.Images) != 2 || m.Images[0] != want[0] || m.Images[1] != want[1] {
		t.Fatalf("the server read %+v, want the text and images %+v", m, want)
	}
}

func TestWireBodyToolCacheTellsSpecsApart(t *testing.T) {
	p := newWireProvider(t)
	base := ToolSpec{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}
	variants := []ToolSpec{
		base,
		{Name: "t", Description: "other", Parameters: base.Parameters},
		{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "t", Description: "d"},
		{Name: "u", Description: "d", Parameters: base.Parameters},
	}
	for range 2 {
		for _, v := range variants {
			checkWireBody(t, p, Request{Tools: []ToolSpec{v}})
		}
	}
	// A spec whose parameters change in place after being cached is not served stale.
	params := []byte(`{"type":"object"}`)
	checkWireBody(t, p, Request{Tools: []ToolSpec{{Name: "m", Parameters: params}}})
	copy(params, `{"type":"string"}`)
	checkWireBody(t, p, Request{Tools: []ToolSpec{{Name: "m", Parameters: params}}})
}

func TestWireBodyToolCacheIsBounded(t *testing.T) {
	p := newWireProvider(t)
	for i := range 2 * maxToolVariants {
		params := json.RawMessage(fmt.Sprintf(`{"type":"object","title":"v%d"}`, i))
		checkWireBody(t, p, Request{Tools: []ToolSpec{{Name: "shifting", Parameters: params}}})
	}
	if n := len(p.tools.byName["shifting"]); n != maxToolVariants {
		t.Fatalf("%d variants cached, want the bound %d", n, maxToolVariants)
	}
	for i := range maxCachedTools + 10 {
		if _, err := p.tools.encoded(ToolSpec{Name: fmt.Sprintf("tool%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if p.tools.n != maxCachedTools {
		t.Fatalf("%d tools cached, want the bound %d", p.tools.n, maxCachedTools)
	}
}

func TestWireBodyConcurrentCallsShareTheToolCache(t *testing.T) {
	p := newWireProvider(t)
	req := benchRequest()
	want, err := json.Marshal(goOpenAIRequest(req, p.opts.Model))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got, err := p.wireBody(req, p.opts.Model)
				if err != nil || string(got) != string(want) {
					errs <- fmt.Sprintf("body %s, err %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if n := len(p.tools.byName["ask_clarification"]); n != 1 {
		t.Fatalf("%d cached copies of one tool, want 1", n)
	}
}

// bodyRecorder is a transport that keeps the body of each request it carries.
type bodyRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
	sizes  []int64
}

func (r *bodyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.sizes = append(r.sizes, req.ContentLength)
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(b))
	return r.next.RoundTrip(req)
}

func TestOpenAISendsTheEncodedBody(t *testing.T) {
	tests := []struct {
		name     string
		redirect bool
	}{
		{"direct", false},
		{"after a 307 redirect, which sends the body again", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newFake(t, nil)
			s.Enqueue(modelserver.Text("ok"))
			rec := &bodyRecorder{next: s.Client().Transport}
			base := s.BaseURL()
			if tt.redirect {
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, s.BaseURL()+"/chat/completions", http.StatusTemporaryRedirect)
				}))
				t.Cleanup(front.Close)
				base = front.URL + "/v1"
			}
			p, err := NewOpenAI(OpenAIOptions{BaseURL: base, APIKey: testKey, HTTPClient: &http.Client{Transport: rec}})
			if err != nil {
				t.Fatal(err)
			}
			req := benchRequest()
			req.MaxTokens = 100
			if resp, err := p.Stream(context.Background(), req, nil); err != nil || resp.Content != "ok" {
				t.Fatalf("resp %+v, err %v", resp, err)
			}
			want, err := json.Marshal(goOpenAIRequest(req, DefaultModel))
			if err != nil {
				t.Fatal(err)
			}
			hops := 1
			if tt.redirect {
				hops = 2
			}
			if len(rec.bodies) != hops {
				t.Fatalf("%d requests, want %d", len(rec.bodies), hops)
			}
			for i, b := range rec.bodies {
				if b != string(want) || rec.sizes[i] != int64(len(want)) {
					t.Fatalf("request %d: body (Content-Length %d)\n%s\nwant go-openai's encoding\n%s", i, rec.sizes[i], b, want)
				}
			}
			if s.Count() != 1 || s.Requests()[0].MaxTokens != 100 {
				t.Fatalf("%d requests reached the server: %+v", s.Count(), s.Requests())
			}
		})
	}
}

func TestOpenAIRefusesInvalidToolParametersWithoutSending(t *testing.T) {
	s, p := newFake(t, nil)
	req := userRequest("hi")
	req.Tools = []ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	_, err := p.Stream(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), `tool "broken"`) {
		t.Fatalf("err = %v, want the broken tool named", err)
	}
	if s.Count() != 0 {
		t.Fatalf("%d requests sent for a request that cannot be encoded", s.Count())
	}
}

func TestOpenAIKeepsGoOpenAIModelChecks(t *testing.T) {
	tools := []ToolSpec{{Name: "t"}}
	tests := []struct {
		name      string
		model     string
		maxTokens int
		tools     []ToolSpec
		want      error
	}{
		{"max_tokens on an o1 model", "o1-mini", 10, nil, openai.ErrReasoningModelMaxTokensDeprecated},
		{"tools on a reasoning GPT-6 model", openai.GPT6Sol, 0, tools, openai.ErrReasoningToolsRequireResponses},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, p := newFake(t, nil)
			req := userRequest("hi")
			req.Model, req.MaxTokens, req.Tools = tt.model, tt.maxTokens, tt.tools
			if _, err := p.Stream(context.Background(), req, nil); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if s.Count() != 0 {
				t.Fatalf("%d requests sent for a request go-openai refuses", s.Count())
			}
		})
	}
}

func FuzzWireBody(f *testing.F) {
	f.Add("You are terse.", "hi <b>", "call_1", "get_weather", `{"city":"Oslo"}`, `{"type":"object"}`)
	f.Add("", "", "", "", "", "")
	f.Add("\u2028\xff", "\x00\x7f\"\\", "\xe2\x82", "&", "\t\n", `{"a":"<>"}`)
	f.Fuzz(func(t *testing.T, system, content, id, name, args, params string) {
		p := newWireProvider(t)
		req := Request{
			System: []string{system, system},
			Messages: []Message{
				{Role: RoleUser, Content: content},
				{Role: RoleAssistant, Content: content, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}},
				{Role: RoleTool, ToolCallID: id, Content: args},
				{Role: RoleUser, Content: content, Images: []Image{{MIME: name, Data: []byte(args)}, {MIME: "image/png", Data: []byte(system)}}},
			},
		}
		if json.Valid([]byte(params)) {
			req.Tools = []ToolSpec{{Name: name, Description: content, Parameters: json.RawMessage(params)}}
		}
		checkWireBody(t, p, req)
	})
}
