package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxHugeBytes caps the text the huge tool returns.
const MaxHugeBytes = 8 << 20

// HeaderPrefix is the prefix of the request headers the whoami tool reports (in canonical form).
const HeaderPrefix = "X-Switchboard-"

// fake is the state behind one New server.
type fake struct {
	opts  Options
	srv   *mcp.Server
	calls atomic.Int64 // tools/call requests received, for the count tool
}

// countCalls is receiving middleware counting every tools/call request, whatever its tool and
// outcome.
func (f *fake) countCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			f.calls.Add(1)
		}
		return next(ctx, method, req)
	}
}

// Input schemas, as sent in tools/list. The SDK validates arguments against them before a
// handler runs; a call that fails validation gets an error result naming the problem.
var (
	noArgsSchema = json.RawMessage(`{"type":"object"}`)
	echoSchema   = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)
	addSchema    = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)
	addOutSchema = json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)
	slowSchema   = json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}`)
	hugeSchema   = json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}}}`)
	secretSchema = json.RawMessage(`{"type":"object","properties":{"token":{"type":"string"},"query":{"type":"string"}}}`)
	nameSchema   = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9_.-]{1,128}$"}},"required":["name"]}`)
)

type (
	echoArgs struct {
		Message string `json:"message"`
	}
	addArgs struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	addOut struct {
		Sum float64 `json:"sum"`
	}
	slowArgs struct {
		MS int `json:"ms"`
	}
	hugeArgs struct {
		Bytes int `json:"bytes"`
	}
	secretArgs struct {
		Token string `json:"token"`
		Query string `json:"query"`
	}
	nameArgs struct {
		Name string `json:"name"`
	}
	noArgs struct{}
)

// addTools adds the tools listed on New.
func (f *fake) addTools() {
	s := f.srv
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back.", InputSchema: echoSchema}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.", InputSchema: addSchema, OutputSchema: addOutSchema}, add)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Report the request's _meta and X-Switchboard-* headers.", InputSchema: noArgsSchema}, whoami)
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Wait ms milliseconds.", InputSchema: slowSchema}, slow)
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Kill the server process.", InputSchema: noArgsSchema}, f.crash)
	mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "Return a text of the given size.", InputSchema: hugeSchema}, huge)
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail with an error result.", InputSchema: noArgsSchema}, fixed(errorResult("it failed on purpose")))
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Return a tiny PNG.", InputSchema: noArgsSchema}, imageTool)
	mcp.AddTool(s, &mcp.Tool{Name: "resource", Description: "Return an embedded text resource.", InputSchema: noArgsSchema}, resourceTool)
	mcp.AddTool(s, &mcp.Tool{Name: "secret_args", Description: "Take a secret token and a query.", InputSchema: secretSchema}, secret)
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool to this server.", InputSchema: nameSchema}, f.addTool)
	mcp.AddTool(s, &mcp.Tool{Name: "remove_tool", Description: "Remove a tool from this server.", InputSchema: nameSchema}, f.removeTool)
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Count the tool calls this server received.", InputSchema: noArgsSchema}, f.count)
	if f.opts.ExtraTools {
		for _, name := range []string{"delegate", "ask_clarification"} {
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "A name that clashes with a built-in tool.", InputSchema: noArgsSchema}, fixed(textResult("clash")))
		}
	}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func errorResult(s string) *mcp.CallToolResult {
	r := textResult(s)
	r.IsError = true
	return r
}

// fixed is a handler of a tool without arguments that always answers a copy of res.
func fixed(res *mcp.CallToolResult) mcp.ToolHandlerFor[noArgs, any] {
	return func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		c := *res
		c.Content = append([]mcp.Content(nil), res.Content...)
		return &c, nil, nil
	}
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	return textResult("echo: " + in.Message), nil, nil
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addOut, error) {
	sum := in.A + in.B
	return textResult(strconv.FormatFloat(sum, 'g', -1, 64)), addOut{Sum: sum}, nil
}

// Identity is what the whoami tool answers, as JSON.
type Identity struct {
	Meta    map[string]any    `json:"meta"`
	Headers map[string]string `json:"headers"`
}

func whoami(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	id := Identity{Headers: map[string]string{}}
	if req.Params != nil && req.Params.Meta != nil {
		id.Meta = req.Params.Meta
	}
	if req.Extra != nil {
		for name, values := range req.Extra.Header {
			if strings.HasPrefix(name, HeaderPrefix) && len(values) > 0 {
				id.Headers[name] = values[0]
			}
		}
	}
	b, err := json.Marshal(id)
	if err != nil {
		return nil, nil, err
	}
	return textResult(string(b)), nil, nil
}

func slow(ctx context.Context, _ *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
	t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return textResult(fmt.Sprintf("done after %dms", in.MS)), nil, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func (f *fake) crash(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	if f.opts.AllowCrash {
		os.Exit(3)
	}
	return errorResult("crash refused"), nil, nil
}

func huge(_ context.Context, _ *mcp.CallToolRequest, in hugeArgs) (*mcp.CallToolResult, any, error) {
	n := min(max(in.Bytes, 0), MaxHugeBytes)
	return textResult(strings.Repeat("x", n)), nil, nil
}

// tinyPNG is a valid 1×1 PNG.
var tinyPNG = sync.OnceValue(func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0x20, G: 0x80, B: 0xe0, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding to memory cannot fail
	}
	return buf.Bytes()
})

func imageTool(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: tinyPNG(), MIMEType: "image/png"},
		&mcp.TextContent{Text: "here is an image"},
	}}, nil, nil
}

func resourceTool(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "note body"}},
	}}, nil, nil
}

func secret(_ context.Context, _ *mcp.CallToolRequest, in secretArgs) (*mcp.CallToolResult, any, error) {
	return textResult("ok " + in.Query), nil, nil
}

func (f *fake) addTool(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
	mcp.AddTool(f.srv, &mcp.Tool{Name: in.Name, Description: "A tool added by add_tool.", InputSchema: noArgsSchema}, fixed(textResult("i am "+in.Name)))
	return textResult("added " + in.Name), nil, nil
}

func (f *fake) removeTool(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
	f.srv.RemoveTools(in.Name)
	return textResult("removed " + in.Name), nil, nil
}

func (f *fake) count(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	return textResult(strconv.FormatInt(f.calls.Load(), 10)), nil, nil
}
