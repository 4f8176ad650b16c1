package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/internal/fake/mcpserver"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// BenchmarkToolCall measures a call of a local streamable-HTTP server's echo tool through the
// manager (policy, schema check, identity in _meta and signed headers, result conversion)
// against the same call made straight on an SDK session to the same server: the difference is
// what Switchboard adds. It reports p50 and p99 of both, in microseconds.
//
//	go test -run '^$' -bench BenchmarkToolCall -benchtime 2000x ./core/tools/
func BenchmarkToolCall(b *testing.B) {
	ts := httptest.NewServer(mcpserver.HTTPHandler(mcpserver.Options{}))
	defer func() {
		ts.CloseClientConnections()
		ts.Close()
	}()
	m := New(Config{IdentityKey: []byte("bench-identity-key-0123456789"), Servers: []Server{{Name: "fake", URL: ts.URL}}},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.Start(context.Background())
	defer m.Close()
	poll.Until(b, "the fake's tools offered", func() bool { return m.Owns("fake__echo") })
	client := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()

	ctx := WithIdentity(context.Background(), alice)
	args := json.RawMessage(`{"message":"hello"}`)
	ours := make([]time.Duration, 0, b.N)
	raw := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res := m.execute(ctx, agent.ToolCall{ID: "c", Name: "fake__echo", Arguments: args})
		t1 := time.Now()
		r, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
		t2 := time.Now()
		if res.IsError || err != nil || r.IsError {
			b.Fatalf("call failed: %+v %v", res, err)
		}
		ours, raw = append(ours, t1.Sub(t0)), append(raw, t2.Sub(t1))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(float64(len(d)-1)*p)].Microseconds())
	}
	b.ReportMetric(pct(ours, 0.5), "switchboard-p50-µs")
	b.ReportMetric(pct(ours, 0.99), "switchboard-p99-µs")
	b.ReportMetric(pct(raw, 0.5), "sdk-p50-µs")
	b.ReportMetric(pct(raw, 0.99), "sdk-p99-µs")
}
