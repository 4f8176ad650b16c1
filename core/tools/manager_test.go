package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/internal/fake/mcpserver"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) {
	mcpserver.MaybeServeStdio()
	// TestLostHTTPSessionReconnects abandons a fake server's handler with a session open on its
	// side, as a restarted server would: that server-side reader is the fake's, not the client's.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read"))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

var alice = Identity{Platform: "slack", ChannelUserID: "U1", DisplayName: "Alice Ünïcode", Conversation: "slack/T1/C1", RunID: "r1"}

// captured is what the HTTP fake received with a tools/call.
type captured struct {
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (c *captured) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				c.mu.Lock()
				c.header, c.body = r.Header.Clone(), body
				c.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

func (c *captured) get() (http.Header, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.header, c.body
}

type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startHTTP serves the fake over streamable HTTP and a manager connected to it.
func startHTTP(t *testing.T, cfg Config, srv Server) (*Manager, *captured, *testLog) {
	t.Helper()
	cap := &captured{}
	ts := httptest.NewServer(cap.wrap(mcpserver.HTTPHandler(mcpserver.Options{ExtraTools: true})))
	srv.URL = ts.URL
	if srv.Name == "" {
		srv.Name = "fake"
	}
	cfg.Servers = append(cfg.Servers, srv)
	logs := &testLog{}
	m := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	m.Start(context.Background())
	t.Cleanup(func() {
		m.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	waitFor(t, "the fake's tools", func() bool { return m.Owns(srv.Name + "__echo") })
	return m, cap, logs
}

func call(m *Manager, ctx context.Context, name, args string) agent.ToolResult {
	return m.execute(ctx, agent.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)})
}

func TestToolOfferedAndCalledWithIdentity(t *testing.T) {
	key := []byte("identity-key-0123456789")
	m, cap, _ := startHTTP(t, Config{IdentityKey: key}, Server{})
	ctx := WithIdentity(context.Background(), alice)

	res := call(m, ctx, "fake__whoami", `{}`)
	if res.IsError {
		t.Fatalf("whoami: %+v", res)
	}
	var who struct {
		Meta    map[string]json.RawMessage `json:"meta"`
		Headers map[string]string          `json:"headers"`
	}
	if err := json.Unmarshal([]byte(res.Content), &who); err != nil {
		t.Fatalf("whoami answered %q: %v", res.Content, err)
	}
	var meta Identity
	if err := json.Unmarshal(who.Meta[MetaKey], &meta); err != nil {
		t.Fatalf("_meta lacks %s: %s", MetaKey, res.Content)
	}
	alice2 := alice
	alice2.Admin = false
	if meta != alice2 {
		t.Errorf("_meta identity = %+v, want %+v", meta, alice2)
	}
	if who.Headers[HeaderUser] != "U1" || who.Headers[HeaderPlatform] != "slack" || who.Headers[HeaderRun] != "r1" {
		t.Errorf("identity headers = %v", who.Headers)
	}
	h, body := cap.get()
	got, err := Verify(key, h, body, time.Minute, time.Now())
	if err != nil {
		t.Fatalf("the signed headers do not verify: %v", err)
	}
	if got.DisplayName != alice.DisplayName || got.Conversation != alice.Conversation {
		t.Errorf("verified identity = %+v", got)
	}
	if _, err := Verify([]byte("another key"), h, body, time.Minute, time.Now()); !errors.Is(err, ErrBadSignature) {
		t.Errorf("a wrong key verifies: %v", err)
	}
	if _, err := Verify(key, h, append(body, ' '), time.Minute, time.Now()); !errors.Is(err, ErrBadSignature) {
		t.Errorf("a changed body verifies: %v", err)
	}
	if _, err := Verify(key, h, body, time.Minute, time.Now().Add(time.Hour)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("an old signature verifies: %v", err)
	}
}

func TestCallResults(t *testing.T) {
	m, _, _ := startHTTP(t, Config{MaxResultBytes: 1000}, Server{})
	ctx := WithIdentity(context.Background(), alice)
	for _, tc := range []struct {
		name, tool, args string
		isError          bool
		code             agent.Code
		contains         []string
	}{
		{"text", "fake__echo", `{"message":"hello"}`, false, "", []string{"echo: hello"}},
		{"structured", "fake__add", `{"a":2,"b":3}`, false, "", []string{"5"}},
		{"isError", "fake__fail", `{}`, true, agent.CodeFailed, []string{"Error: it failed on purpose"}},
		{"image described", "fake__image", `{}`, false, "", []string{"an image (image/png", "here is an image"}},
		{"resource described", "fake__resource", `{}`, false, "", []string{"file:///notes.txt", "note body"}},
		{"huge is cut", "fake__huge", `{"bytes":5000}`, false, "", []string{"[cut: the result was 5000 bytes; the first 1000 are shown]"}},
		{"missing argument", "fake__echo", `{}`, true, agent.CodeInvalidArgs, []string{"invalid arguments", "message"}},
		{"wrong type", "fake__add", `{"a":"two","b":3}`, true, agent.CodeInvalidArgs, []string{"invalid arguments"}},
		{"not JSON", "fake__echo", `{"message":`, true, agent.CodeInvalidArgs, []string{"not valid JSON"}},
		{"not an object", "fake__echo", `[1]`, true, agent.CodeInvalidArgs, []string{"must be a JSON object"}},
		{"unknown tool", "fake__nosuch", `{}`, true, agent.CodeFailed, []string{"not available"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(m, ctx, tc.tool, tc.args)
			if res.IsError != tc.isError || (tc.code != "" && res.Code != tc.code) {
				t.Errorf("result = %+v, want isError %v code %q", res, tc.isError, tc.code)
			}
			for _, want := range tc.contains {
				if !strings.Contains(res.Content, want) {
					t.Errorf("result %q lacks %q", cutUTF8(res.Content, 300), want)
				}
			}
			if len(res.Content) > 1200 {
				t.Errorf("result is %d bytes, past the cap", len(res.Content))
			}
		})
	}
	if res := call(m, context.Background(), "fake__echo", `{"message":"x"}`); res.Code != agent.CodeDenied {
		t.Errorf("a call without an identity = %+v, want denied", res)
	}
}

func TestMalformedToolsAreSkipped(t *testing.T) {
	m, _, logs := startHTTP(t, Config{}, Server{})
	for _, name := range []string{"fake__delegate", "fake__ask_clarification"} {
		if m.Owns(name) {
			t.Errorf("%s is offered; its name clashes with the lead's tools", name)
		}
	}
	st := m.Status()
	if len(st) != 1 || len(st[0].Skipped) != 2 || st[0].State != StateUp {
		t.Errorf("status = %+v, want up with two skipped tools", st)
	}
	if !strings.Contains(logs.String(), "skipping a malformed tool") {
		t.Errorf("no warning logged:\n%s", logs)
	}
	for _, tc := range []struct{ name, schema, want string }{
		{"not an object", `"x"`, "not a JSON object"},
		{"type string", `{"type":"string"}`, `type is not "object"`},
		{"no type", `{"properties":{}}`, `type is not "object"`},
		{"bad keyword", `{"type":"object","properties":{"a":{"type":7}}}`, "not a JSON Schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := checkSchema(json.RawMessage(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkSchema(%s) = %v, want %q", tc.schema, err, tc.want)
			}
		})
	}
}

func TestIncludeExclude(t *testing.T) {
	m, _, _ := startHTTP(t, Config{}, Server{Include: []string{"e*", "a*", "s*"}, Exclude: []string{"add_tool", "slow"}})
	got := m.Names(alice, 0)
	want := []string{"fake__add", "fake__echo", "fake__secret_args"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("offered = %v, want %v", got, want)
	}
}

func TestToolListChangedRefreshesTheOffer(t *testing.T) {
	m, _, _ := startHTTP(t, Config{}, Server{})
	rt := agent.NewRuntime(llm.NewScripted())
	detach := m.Attach(rt)
	defer detach()
	ctx := WithIdentity(context.Background(), alice)
	if res := call(m, ctx, "fake__add_tool", `{"name":"fresh"}`); res.IsError {
		t.Fatalf("add_tool: %+v", res)
	}
	waitFor(t, "the new tool offered", func() bool { return m.Owns("fake__fresh") })
	if res := call(m, ctx, "fake__fresh", `{}`); res.Content != "i am fresh" {
		t.Errorf("the new tool answered %+v", res)
	}
	if res := call(m, ctx, "fake__remove_tool", `{"name":"fresh"}`); res.IsError {
		t.Fatalf("remove_tool: %+v", res)
	}
	waitFor(t, "the removed tool withdrawn", func() bool { return !m.Owns("fake__fresh") })
}

func TestCallTimesOut(t *testing.T) {
	m, _, _ := startHTTP(t, Config{}, Server{CallTimeout: 200 * time.Millisecond})
	res := call(m, WithIdentity(context.Background(), alice), "fake__slow", `{"ms":10000}`)
	if !res.IsError || !strings.Contains(res.Content, "did not answer within 200ms") {
		t.Errorf("slow call = %+v, want a timeout", res)
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	const secret = "S3CRET-header-value"
	dir := t.TempDir()
	path := dir + "/auth"
	if err := os.WriteFile(path, []byte("Bearer "+secret+"-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, cap, logs := startHTTP(t, Config{}, Server{Headers: map[string]string{"X-Api-Key": secret}, HeaderFiles: map[string]string{"Authorization": path}})
	res := call(m, WithIdentity(context.Background(), alice), "fake__secret_args", `{"token":"`+secret+`","query":"q"}`)
	if res.Content != "ok q" {
		t.Fatalf("secret_args = %+v", res)
	}
	h, _ := cap.get()
	if h.Get("X-Api-Key") != secret || h.Get("Authorization") != "Bearer "+secret+"-from-file" {
		t.Errorf("configured headers not sent: %v", h)
	}
	if strings.Contains(logs.String(), "S3CRET") {
		t.Errorf("a secret reached the log:\n%s", logs)
	}
	if shown := DisplayArgs(json.RawMessage(`{"token":"`+secret+`","query":"q"}`), 500); strings.Contains(shown, "S3CRET") {
		t.Errorf("DisplayArgs shows a secret: %s", shown)
	}
}

func TestServerDownDoesNotHoldStartup(t *testing.T) {
	logs := &testLog{}
	m := New(Config{ConnectTimeout: time.Second, Servers: []Server{{Name: "gone", URL: "http://127.0.0.1:1/mcp"}}},
		Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	m.Start(context.Background())
	defer m.Close()
	waitFor(t, "the server marked down", func() bool { return m.Status()[0].State == StateDown })
	if len(m.Names(alice, 0)) != 0 {
		t.Errorf("a down server's tools are offered")
	}
	waitFor(t, "a few retries", func() bool { return m.byName["gone"].failureCount() >= 3 })
	if n := strings.Count(logs.String(), "server is down"); n != 1 {
		t.Errorf("the outage was logged %d times at warn level, want once:\n%s", n, logs)
	}
}

func (s *server) failureCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}

func (s *server) pidList() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.pids...)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestStdioServerCrashRestartAndShutdown: a stdio server that crashes mid-call gives the model
// an error and is restarted; Close leaves no process behind (checked in the process table).
func TestStdioServerCrashRestartAndShutdown(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := New(Config{Servers: []Server{{Name: "local", Command: []string{exe, "-test.run=^$"},
		Env: map[string]string{mcpserver.EnvStdio: "1"}}}}, Options{})
	m.Start(context.Background())
	closed := false
	defer func() {
		if !closed {
			m.Close()
		}
	}()
	waitFor(t, "the stdio server's tools", func() bool { return m.Owns("local__echo") })
	ctx := WithIdentity(context.Background(), alice)
	if res := call(m, ctx, "local__echo", `{"message":"hi"}`); res.Content != "echo: hi" {
		t.Fatalf("echo = %+v", res)
	}
	if res := call(m, ctx, "local__crash", `{}`); !res.IsError || !strings.Contains(res.Content, "closed the connection") {
		t.Errorf("a crash mid-call = %+v, want an error saying the server closed the connection", res)
	}
	s := m.byName["local"]
	waitFor(t, "the server restarted", func() bool { return len(s.pidList()) >= 2 && m.Status()[0].State == StateUp })
	if res := call(m, ctx, "local__echo", `{"message":"again"}`); res.Content != "echo: again" {
		t.Errorf("echo after the restart = %+v", res)
	}
	// The environment is only what was configured.
	pids := s.pidList()
	m.Close()
	closed = true
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still running after Close", pid)
		}
	}
	if st := m.Status()[0].State; st != StateStopped {
		t.Errorf("state after Close = %s", st)
	}
}

func TestStdioEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("SB_BOT_SECRET", "S3CRET-of-the-bot")
	s := &server{cfg: Server{Env: map[string]string{"A": "1"}}}
	env, err := s.environ()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "S3CRET") || !strings.Contains(joined, "A=1") || !strings.Contains(joined, "PATH="+defaultPath) {
		t.Errorf("environment = %v", env)
	}
}

// swappable serves whatever handler it holds now.
type swappable struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swappable) set(h http.Handler) {
	s.mu.Lock()
	s.h = h
	s.mu.Unlock()
}

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// TestLostHTTPSessionReconnects: a server that forgot the session (restarted) answers 404; the
// manager reconnects, and calls go through again.
func TestLostHTTPSessionReconnects(t *testing.T) {
	sw := &swappable{h: mcpserver.HTTPHandler(mcpserver.Options{})}
	ts := httptest.NewServer(sw)
	m := New(Config{Servers: []Server{{Name: "fake", URL: ts.URL}}}, Options{})
	m.Start(context.Background())
	defer func() {
		m.Close()
		ts.CloseClientConnections()
		ts.Close()
	}()
	waitFor(t, "the fake's tools", func() bool { return m.Owns("fake__echo") })
	ctx := WithIdentity(context.Background(), alice)
	if res := call(m, ctx, "fake__echo", `{"message":"one"}`); res.Content != "echo: one" {
		t.Fatalf("first call = %+v", res)
	}
	sw.set(mcpserver.HTTPHandler(mcpserver.Options{})) // the server restarted: it knows no session
	ts.CloseClientConnections()
	// The call that meets the loss is made again on a new session when the server refused it
	// (404, session missing); one the SDK had already failed as closed reads as an error the
	// model can retry. Either way the manager reconnects, and the next call goes through.
	if res := call(m, ctx, "fake__echo", `{"message":"two"}`); res.Content != "echo: two" && !strings.Contains(res.Content, "closed the connection") {
		t.Errorf("call after the server lost the session = %+v", res)
	}
	waitFor(t, "a new session", func() bool {
		return call(m, ctx, "fake__echo", `{"message":"three"}`).Content == "echo: three"
	})
}

// inFlight counts the tools/call requests a server is answering at once.
type inFlight struct {
	mu       sync.Mutex
	now, max int
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.now++
		f.max = max(f.max, f.now)
		f.mu.Unlock()
		h.ServeHTTP(w, r)
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	})
}

// TestCallsOfOneResponseRunInParallel: the model's several tool calls in one response are made
// at the same time, and their results come back in call order.
func TestCallsOfOneResponseRunInParallel(t *testing.T) {
	fl := &inFlight{}
	ts := httptest.NewServer(fl.wrap(mcpserver.HTTPHandler(mcpserver.Options{})))
	m := New(Config{Servers: []Server{{Name: "fake", URL: ts.URL}}}, Options{})
	m.Start(context.Background())
	defer func() {
		m.Close()
		ts.CloseClientConnections()
		ts.Close()
	}()
	waitFor(t, "the fake's tools", func() bool { return m.Owns("fake__slow") })
	model := llm.NewScripted(
		llm.Reply{ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "fake__slow", Arguments: `{"ms":300}`},
			{ID: "c2", Name: "fake__slow", Arguments: `{"ms":301}`},
			{ID: "c3", Name: "fake__echo", Arguments: `{"message":"third"}`},
		}},
		llm.Reply{Text: "done"},
	)
	rt := agent.NewRuntime(model)
	defer m.Attach(rt)()
	a, err := rt.Create(agent.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Dispose(context.Background()) }()
	if err := a.SendInput(WithIdentity(context.Background(), alice), agent.Input{Content: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := a.WhenIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, e := range a.Session().Since(0) {
		if e.Kind == agent.KindToolResult {
			results = append(results, e.Content)
		}
	}
	if want := []string{"done after 300ms", "done after 301ms", "echo: third"}; !slices.Equal(results, want) {
		t.Errorf("results %q, want %q in call order", results, want)
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.max < 2 {
		t.Errorf("at most %d calls were in flight at once, want the response's calls made together", fl.max)
	}
}

// TestScopeNarrowsThePolicy: an identity scoped to a profile's tools is offered and may call
// only those, whatever the policy allows; a nil scope changes nothing.
func TestScopeNarrowsThePolicy(t *testing.T) {
	m, _, _ := startHTTP(t, Config{}, Server{})
	all := m.Names(alice, 0)
	if len(all) < 2 {
		t.Fatalf("the fake offers %v; the test needs two tools", all)
	}
	scoped := alice
	scoped.Scope = &Scope{Globs: []string{"fake__echo"}}
	if got := m.Names(scoped, 0); len(got) != 1 || got[0] != "fake__echo" {
		t.Errorf("scoped names %v, want [fake__echo]", got)
	}
	ctx := WithIdentity(context.Background(), scoped)
	if res := call(m, ctx, "fake__whoami", `{}`); !res.IsError || res.Code != agent.CodeDenied {
		t.Errorf("a tool outside the scope ran: %+v", res)
	}
	if res := call(m, ctx, "fake__echo", `{"message":"hi"}`); res.IsError {
		t.Errorf("the scope's tool was refused: %+v", res)
	}
	none := alice
	none.Scope = &Scope{}
	if got := m.Names(none, 0); len(got) != 0 {
		t.Errorf("an empty scope offers %v", got)
	}
}
