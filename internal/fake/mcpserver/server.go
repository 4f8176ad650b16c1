// Package mcpserver is a fake MCP server for the tests of every package that talks to MCP
// servers. It is built on the official Go SDK, so it speaks the real protocol over whatever
// transport a test picks: in memory (connect New's server with mcp.NewInMemoryTransports),
// streamable HTTP (HTTPHandler) or stdio (ServeStdio, or a test binary that re-executes itself
// through MaybeServeStdio).
//
// Its tools cover what a client must handle: plain text, structured content, images, embedded
// resources, error results, slow and cancelled calls, huge results, a process that dies mid-call,
// tools added and removed while connected (with the list_changed notification), and name
// clashes. The tools and their contracts are listed on New.
//
// The SDK negotiates the protocol version with the client: in memory and over stdio an SDK
// client speaks 2026-07-28, which puts "io.modelcontextprotocol/…" keys in the _meta of every
// request and delivers list_changed only to a client that asked for it (the SDK client does so
// when it has a ToolListChangedHandler); the stateful streamable HTTP handler speaks 2025-11-25.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure the fake.
type Options struct {
	// Name is the server name reported in initialize (default "fake").
	Name string
	// AllowCrash makes the crash tool exit the process with status 3, writing nothing; without
	// it the crash tool answers an error result "crash refused". Only a fake running in its own
	// process (ServeStdio, MaybeServeStdio) should allow it.
	AllowCrash bool
	// ExtraTools also serves tools named delegate and ask_clarification, whose names clash with
	// switchboard's own tools, so a client must skip them.
	ExtraTools bool
}

// version is the server version reported in initialize.
const version = "1.0.0"

// New returns a fake server with its tools added. Each call returns an independent server with
// its own tools and call count; a server may serve many sessions at once. Arguments are
// validated against the input schemas before a tool runs (a bad call gets an error result
// naming the problem). The tools and their contracts:
//
//   - echo {message: string, required}: text "echo: <message>".
//   - add {a, b: number, required}: text "<a+b>" (Go's shortest float formatting) and
//     structured content {"sum": a+b}, with an output schema.
//   - whoami {}: one text, the JSON {"meta": <the call's params._meta, or null>, "headers":
//     {<each request header starting with HeaderPrefix, canonical name → first value>}};
//     headers are only seen over HTTP and are {} otherwise. A client on protocol 2026-07-28
//     (in memory, stdio) gets the SDK's "io.modelcontextprotocol/…" keys in meta too.
//   - slow {ms: integer ≥ 0}: waits ms milliseconds, then text "done after <ms>ms"; if the
//     call's context ends first, an error result with the context's error.
//   - crash {}: with AllowCrash, exits the process with status 3 without answering; without,
//     an error result "crash refused".
//   - huge {bytes: integer ≥ 0}: one text of that many 'x' bytes, capped at MaxHugeBytes.
//   - fail {}: an error result (IsError) with text "it failed on purpose".
//   - image {}: an image (a 1×1 PNG, image/png), then text "here is an image".
//   - resource {}: an embedded text resource (uri file:///notes.txt, text/plain, "note body").
//   - secret_args {token, query: string}: text "ok <query>"; the token is never echoed.
//   - add_tool {name: string matching ^[A-Za-z0-9_.-]{1,128}$, required}: adds (or replaces)
//     a tool <name> with no arguments that answers "i am <name>", then text "added <name>".
//     The SDK then sends notifications/tools/list_changed to the connected clients.
//   - remove_tool {name, required}: removes tool <name> if present (any tool, built-in ones
//     included), then text "removed <name>"; list_changed is sent when a tool was removed.
//   - count {}: text with the number of tools/call requests this server received so far,
//     this one included, whatever their tool or outcome.
//   - with ExtraTools, delegate {} and ask_clarification {}: text "clash".
func New(o Options) *mcp.Server {
	name := o.Name
	if name == "" {
		name = "fake"
	}
	f := &fake{opts: o}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, nil)
	f.srv.AddReceivingMiddleware(f.countCalls)
	f.addTools()
	return f.srv
}

// HTTPHandler serves one New(o) over streamable HTTP (mcp.NewStreamableHTTPHandler, stateful):
// every session shares the one server, so tools added by add_tool are seen by all of them and
// count counts the calls of all of them. Mount it on an httptest.Server.
//
// A connected client holds a standalone SSE GET open, which httptest.Server.Close waits for:
// close client sessions before closing the HTTP server.
func HTTPHandler(o Options) http.Handler {
	srv := New(o)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// ServeStdio serves New(o) on os.Stdin and os.Stdout until ctx ends or stdin closes. It returns
// nil when stdin closes, ctx's error when ctx ends, and any other error of the session.
func ServeStdio(ctx context.Context, o Options) error {
	err := New(o).Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// EnvStdio is the environment variable that MaybeServeStdio reads.
const EnvStdio = "SB_FAKE_MCP_STDIO"

// MaybeServeStdio is for a test binary's TestMain, called before m.Run. When os.Getenv(EnvStdio)
// is non-empty it serves over stdio, with AllowCrash true and ExtraTools when the value contains
// "extra", and exits the process with status 0 when stdin closes (1 after printing the error to
// stderr if the session fails otherwise); it never returns. When the variable is empty it
// returns at once and the tests run.
//
// So a test can start its own binary as a stdio MCP server:
//
//	cmd := exec.Command(os.Args[0], "-test.run=^$")
//	cmd.Env = append(os.Environ(), mcpserver.EnvStdio+"=1")
//	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
func MaybeServeStdio() {
	v := os.Getenv(EnvStdio)
	if v == "" {
		return
	}
	o := Options{AllowCrash: true, ExtraTools: strings.Contains(v, "extra")}
	if err := ServeStdio(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
