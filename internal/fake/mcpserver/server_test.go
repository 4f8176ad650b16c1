package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) {
	MaybeServeStdio()
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait on a channel in these tests.
const waitLimit = 10 * time.Second

func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, opts)
}

// connect connects a client to srv in memory; both sessions end with the test.
func connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	cs, err := newClient(opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// connectHTTP connects a client to url over streamable HTTP, sending headers on every request
// through the client's round tripper.
func connectHTTP(t *testing.T, ts *httptest.Server, headers http.Header, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{base: ts.Client().Transport, headers: headers}}
	cs, err := newClient(opts).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startHTTP serves HTTPHandler(o) until the test ends (after the client sessions, which the
// test registers later and so closes first).
func startHTTP(t *testing.T, o Options) *httptest.Server {
	ts := httptest.NewServer(HTTPHandler(o))
	t.Cleanup(ts.Close)
	return ts
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for name, values := range h.headers {
		req.Header[name] = values
	}
	return h.base.RoundTrip(req)
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text is the text of res's only content, failing the test if it is anything else.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d contents, want 1: %s", len(res.Content), show(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// show renders a result for a failure message, long texts shortened.
func show(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func identity(t *testing.T, res *mcp.CallToolResult) Identity {
	t.Helper()
	var id Identity
	if err := json.Unmarshal([]byte(text(t, res)), &id); err != nil {
		t.Fatalf("whoami answered non-JSON: %v", err)
	}
	return id
}

func TestTools(t *testing.T) {
	cs := connect(t, New(Options{}), nil)
	tests := []struct {
		name    string
		tool    string
		args    any
		isError bool
		want    []mcp.Content // compared when not nil
		// structured is compared with the result's StructuredContent when not nil.
		structured any
		check      func(t *testing.T, res *mcp.CallToolResult)
	}{
		{name: "echo", tool: "echo", args: map[string]any{"message": "hi there"},
			want: []mcp.Content{&mcp.TextContent{Text: "echo: hi there"}}},
		{name: "echo without message", tool: "echo", args: map[string]any{}, isError: true,
			check: func(t *testing.T, res *mcp.CallToolResult) {
				if got := text(t, res); !strings.Contains(got, "message") {
					t.Errorf("validation error %q does not name the missing argument", got)
				}
			}},
		{name: "add", tool: "add", args: map[string]any{"a": 2, "b": 3.5},
			want:       []mcp.Content{&mcp.TextContent{Text: "5.5"}},
			structured: map[string]any{"sum": 5.5}},
		{name: "add integers", tool: "add", args: map[string]any{"a": -2, "b": 40},
			want:       []mcp.Content{&mcp.TextContent{Text: "38"}},
			structured: map[string]any{"sum": 38.0}},
		{name: "add with a string", tool: "add", args: map[string]any{"a": "2", "b": 3}, isError: true},
		{name: "add without b", tool: "add", args: map[string]any{"a": 2}, isError: true},
		{name: "slow", tool: "slow", args: map[string]any{"ms": 5},
			want: []mcp.Content{&mcp.TextContent{Text: "done after 5ms"}}},
		{name: "slow with a fraction", tool: "slow", args: map[string]any{"ms": 1.5}, isError: true},
		{name: "crash refused", tool: "crash", isError: true,
			want: []mcp.Content{&mcp.TextContent{Text: "crash refused"}}},
		{name: "huge", tool: "huge", args: map[string]any{"bytes": 100_000},
			check: func(t *testing.T, res *mcp.CallToolResult) {
				if got := text(t, res); got != strings.Repeat("x", 100_000) {
					t.Errorf("got %d bytes (%.20q…), want 100000 x", len(got), got)
				}
			}},
		{name: "huge capped", tool: "huge", args: map[string]any{"bytes": MaxHugeBytes + 1},
			check: func(t *testing.T, res *mcp.CallToolResult) {
				if got := text(t, res); len(got) != MaxHugeBytes || strings.Trim(got, "x") != "" {
					t.Errorf("got %d bytes, want %d x", len(got), MaxHugeBytes)
				}
			}},
		{name: "huge zero", tool: "huge", args: map[string]any{"bytes": 0},
			want: []mcp.Content{&mcp.TextContent{Text: ""}}},
		{name: "huge negative", tool: "huge", args: map[string]any{"bytes": -1}, isError: true},
		{name: "fail", tool: "fail", isError: true,
			want: []mcp.Content{&mcp.TextContent{Text: "it failed on purpose"}}},
		{name: "image", tool: "image",
			want: []mcp.Content{
				&mcp.ImageContent{Data: tinyPNG(), MIMEType: "image/png"},
				&mcp.TextContent{Text: "here is an image"},
			},
			check: func(t *testing.T, res *mcp.CallToolResult) {
				img, err := png.Decode(bytes.NewReader(res.Content[0].(*mcp.ImageContent).Data))
				if err != nil {
					t.Fatalf("image is not a PNG: %v", err)
				}
				if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
					t.Errorf("image bounds %v, want 1×1", b)
				}
			}},
		{name: "resource", tool: "resource",
			want: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "file:///notes.txt", MIMEType: "text/plain", Text: "note body"}}}},
		{name: "secret args", tool: "secret_args", args: map[string]any{"token": "s3cr3t-token", "query": "weather"},
			want: []mcp.Content{&mcp.TextContent{Text: "ok weather"}},
			check: func(t *testing.T, res *mcp.CallToolResult) {
				if strings.Contains(show(res), "s3cr3t") {
					t.Errorf("the token leaked into the result: %s", show(res))
				}
			}},
		{name: "add_tool with a bad name", tool: "add_tool", args: map[string]any{"name": "no spaces"}, isError: true},
		{name: "remove_tool of a missing tool", tool: "remove_tool", args: map[string]any{"name": "nope"},
			want: []mcp.Content{&mcp.TextContent{Text: "removed nope"}}},
		{name: "whoami in memory", tool: "whoami",
			check: func(t *testing.T, res *mcp.CallToolResult) {
				id := identity(t, res)
				if id.Headers == nil || len(id.Headers) != 0 {
					t.Errorf("headers = %#v, want an empty object without HTTP", id.Headers)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, tt.tool, tt.args)
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tt.isError, show(res))
			}
			if tt.want != nil && !reflect.DeepEqual(res.Content, tt.want) {
				t.Errorf("content = %s, want %s", show(res), show(&mcp.CallToolResult{Content: tt.want}))
			}
			if tt.structured != nil && !reflect.DeepEqual(res.StructuredContent, tt.structured) {
				t.Errorf("structured content = %#v, want %#v", res.StructuredContent, tt.structured)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestCallingAnUnknownToolIsAProtocolError(t *testing.T) {
	cs := connect(t, New(Options{}), nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	if err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Fatalf("err = %v, want an unknown-tool error", err)
	}
}

func TestWhoamiReportsMeta(t *testing.T) {
	cs := connect(t, New(Options{}), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "whoami",
		Meta: mcp.Meta{"switchboard/user": "u-42", "progressToken": "p1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t, res)
	if id.Meta["switchboard/user"] != "u-42" || id.Meta["progressToken"] != "p1" {
		t.Errorf("meta = %v, want the caller's keys", id.Meta)
	}
	// In memory the SDK speaks 2026-07-28, which adds its own keys to every request's _meta.
	if id.Meta[mcp.MetaKeyProtocolVersion] != "2026-07-28" {
		t.Errorf("meta = %v, want the SDK's protocol version key too", id.Meta)
	}
}

func TestListTools(t *testing.T) {
	base := []string{"add", "add_tool", "count", "crash", "echo", "fail", "huge", "image",
		"remove_tool", "resource", "secret_args", "slow", "whoami"}
	tests := []struct {
		name       string
		opts       Options
		serverName string
		tools      []string
	}{
		{name: "defaults", serverName: "fake", tools: base},
		{name: "named with extra tools", opts: Options{Name: "other", ExtraTools: true}, serverName: "other",
			tools: append([]string{"ask_clarification", "delegate"}, base...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, New(tt.opts), nil)
			if got := cs.InitializeResult().ServerInfo.Name; got != tt.serverName {
				t.Errorf("server name = %q, want %q", got, tt.serverName)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				schema, ok := tool.InputSchema.(map[string]any)
				if !ok || schema["type"] != "object" {
					t.Errorf("tool %s input schema = %#v, want an object schema", tool.Name, tool.InputSchema)
				}
				if tool.Description == "" {
					t.Errorf("tool %s has no description", tool.Name)
				}
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tt.tools))
			if !slices.Equal(names, want) {
				t.Errorf("tools = %v, want %v", names, want)
			}
			for _, name := range []string{"delegate", "ask_clarification"} {
				if slices.Contains(tt.tools, name) {
					if got := text(t, call(t, cs, name, nil)); got != "clash" {
						t.Errorf("%s answered %q, want clash", name, got)
					}
				}
			}
		})
	}
}

func TestCountCountsEveryCallIncludingItself(t *testing.T) {
	cs := connect(t, New(Options{}), nil)
	if got := text(t, call(t, cs, "count", nil)); got != "1" {
		t.Fatalf("first count = %q, want 1", got)
	}
	call(t, cs, "echo", map[string]any{"message": "a"})
	call(t, cs, "fail", nil)
	call(t, cs, "echo", map[string]any{}) // invalid arguments still count
	if got := text(t, call(t, cs, "count", nil)); got != "5" {
		t.Fatalf("count = %q, want 5", got)
	}
	// A second server counts on its own.
	other := connect(t, New(Options{}), nil)
	if got := text(t, call(t, other, "count", nil)); got != "1" {
		t.Fatalf("count on another server = %q, want 1", got)
	}
}

func TestSlowEndsWhenTheCallIsCancelled(t *testing.T) {
	srv := New(Options{})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClient(nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	probe := connect(t, srv, nil) // counts calls on the same server

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 600_000}})
		errc <- err
	}()
	// The count includes the probe's own count calls: one more means the slow call arrived.
	probes := 0
	poll.Until(t, "the slow call to reach the server", func() bool {
		probes++
		return text(t, call(t, probe, "count", nil)) != strconv.Itoa(probes)
	})
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("slow call err = %v, want context.Canceled", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the cancelled slow call did not return")
	}
	// The server's handler must end too, or closing the session would wait for it.
	done := make(chan struct{})
	go func() {
		cs.Close()
		ss.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("the server session did not end: the slow handler ignored the cancellation")
	}
}

func TestHTTP(t *testing.T) {
	ts := startHTTP(t, Options{Name: "web"})
	cs := connectHTTP(t, ts, http.Header{
		"X-Switchboard-User":  {"alice"},
		"X-Switchboard-Trace": {"t-1"},
		"X-Other":             {"hidden"},
	}, nil)
	if got := cs.InitializeResult().ServerInfo.Name; got != "web" {
		t.Errorf("server name = %q, want web", got)
	}

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Meta: mcp.Meta{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t, res)
	wantHeaders := map[string]string{"X-Switchboard-User": "alice", "X-Switchboard-Trace": "t-1"}
	if !reflect.DeepEqual(id.Headers, wantHeaders) {
		t.Errorf("headers = %v, want %v", id.Headers, wantHeaders)
	}
	if id.Meta["k"] != "v" {
		t.Errorf("meta = %v, want k=v", id.Meta)
	}

	if got := text(t, call(t, cs, "echo", map[string]any{"message": "over http"})); got != "echo: over http" {
		t.Errorf("echo = %q", got)
	}
	// All sessions share one server: a second session sees the first one's calls.
	other := connectHTTP(t, ts, nil, nil)
	if got := text(t, call(t, other, "count", nil)); got != "3" {
		t.Errorf("count from a second session = %q, want 3", got)
	}
	if id := identity(t, call(t, other, "whoami", nil)); len(id.Headers) != 0 || id.Meta != nil {
		t.Errorf("second session's whoami = %+v, want no headers and null meta", id)
	}
}

func TestAddToolNotifiesListChanged(t *testing.T) {
	tests := []struct {
		name    string
		connect func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession
	}{
		{name: "in memory", connect: func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			return connect(t, New(Options{}), opts)
		}},
		{name: "http", connect: func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHTTP(t, startHTTP(t, Options{}), nil, opts)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := make(chan struct{}, 1)
			cs := tt.connect(t, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			})
			awaitChange := func(what string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(waitLimit):
					t.Fatalf("no tools/list_changed after %s", what)
				}
			}
			hasTool := func(name string) bool {
				t.Helper()
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == name })
			}

			if got := text(t, call(t, cs, "add_tool", map[string]any{"name": "dyn.tool-1"})); got != "added dyn.tool-1" {
				t.Fatalf("add_tool = %q", got)
			}
			awaitChange("add_tool")
			if !hasTool("dyn.tool-1") {
				t.Fatal("the added tool is not listed")
			}
			if got := text(t, call(t, cs, "dyn.tool-1", nil)); got != "i am dyn.tool-1" {
				t.Errorf("added tool answered %q", got)
			}

			if got := text(t, call(t, cs, "remove_tool", map[string]any{"name": "dyn.tool-1"})); got != "removed dyn.tool-1" {
				t.Fatalf("remove_tool = %q", got)
			}
			awaitChange("remove_tool")
			if hasTool("dyn.tool-1") {
				t.Fatal("the removed tool is still listed")
			}
		})
	}
}

// startStdio starts this test binary as a stdio server (see TestMain) with EnvStdio=env.
func startStdio(t *testing.T, env string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvStdio+"="+env)
	cmd.Stderr = os.Stderr
	cs, err := newClient(nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", os.Args[0], err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func TestStdio(t *testing.T) {
	tests := []struct {
		env   string
		extra bool
	}{
		{env: "1"},
		{env: "extra", extra: true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			cs, cmd := startStdio(t, tt.env)
			if got := text(t, call(t, cs, "echo", map[string]any{"message": "over stdio"})); got != "echo: over stdio" {
				t.Errorf("echo = %q", got)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			extra := slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "delegate" })
			if extra != tt.extra {
				t.Errorf("delegate listed = %v, want %v", extra, tt.extra)
			}
			// Closing stdin ends the server, which exits with status 0.
			if err := cs.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
		})
	}
}

func TestStdioCrash(t *testing.T) {
	cs, cmd := startStdio(t, "1")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash"}); err == nil {
		t.Fatal("the crash call succeeded")
	}
	// CommandTransport waits for the process when the session closes and reports how it ended.
	err := cs.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("close err = %v, want exit status 3", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
}
