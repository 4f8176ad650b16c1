package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-bot/switchboard/channels/router"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// toolsConfig turns the tools.* keys into the tools package's configuration.
func toolsConfig(t config.Tools) tools.Config {
	out := tools.Config{
		Subagents:      t.Subagents,
		ApprovalTTL:    t.ApprovalTTL,
		CallTimeout:    t.CallTimeout,
		ConnectTimeout: t.ConnectTimeout,
		MaxResultBytes: t.MaxResultBytes,
	}
	if t.IdentityKey != "" {
		out.IdentityKey = []byte(t.IdentityKey)
	}
	names := make([]string, 0, len(t.Servers))
	for n := range t.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := t.Servers[n]
		out.Servers = append(out.Servers, tools.Server{Name: n, Command: s.Command, Env: s.Env, EnvFiles: s.EnvFile, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, HeaderFiles: s.HeadersFile, Include: s.Include, Exclude: s.Exclude, CallTimeout: s.CallTimeout})
	}
	for _, r := range t.Policy {
		out.Policy = append(out.Policy, tools.Rule{Tools: r.Tools, Allow: r.Allow, Approval: tools.Approval(r.Approval)})
	}
	return out
}

// toolsInfo answers /tools from the manager.
type toolsInfo struct{ m *tools.Manager }

func (t toolsInfo) ReloadTools() { t.m.Reload() }

func (t toolsInfo) ToolsReport(admin bool) string {
	var b strings.Builder
	b.WriteString("**Tool servers**")
	for _, s := range t.m.Status() {
		fmt.Fprintf(&b, "\n\n**%s** (%s): %s since %s", s.Name, s.Transport, s.State, s.Since.UTC().Format(time.RFC3339))
		if s.Reason != "" && admin {
			b.WriteString(" — " + s.Reason)
		}
		if len(s.Tools) > 0 {
			b.WriteString("\n" + strings.Join(s.Tools, ", "))
		} else {
			b.WriteString("\n(no tools offered)")
		}
		if admin && len(s.Skipped) > 0 {
			b.WriteString("\nSkipped: " + strings.Join(s.Skipped, "; "))
		}
	}
	if admin {
		b.WriteString("\n\n**Policy**\n" + strings.Join(t.m.PolicyText(), "\n"))
	}
	return b.String()
}

// toolMetrics are the tools' Prometheus metrics.
type toolMetrics struct {
	calls     *prometheus.CounterVec
	seconds   *prometheus.HistogramVec
	approvals *prometheus.CounterVec
	state     *prometheus.GaugeVec
}

func newToolMetrics(reg *prometheus.Registry) *toolMetrics {
	m := &toolMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_tool_calls_total", Help: "Tool calls by server, tool and outcome (ok, error, failed, timeout, invalid_args, denied, cancelled).",
		}, []string{"server", "tool", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_tool_call_seconds", Help: "Tool call duration by server.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 10),
		}, []string{"server"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_tool_approvals_total", Help: "Approval decisions by server, tool and decision (approved, denied, expired, refused).",
		}, []string{"server", "tool", "decision"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_tool_server_state", Help: "1 for the state each tool server is in (connecting, up, down, stopped), 0 for the others.",
		}, []string{"server", "state"}),
	}
	reg.MustRegister(m.calls, m.seconds, m.approvals, m.state)
	return m
}

func (m *toolMetrics) Call(server, tool, outcome string, d time.Duration) {
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	if outcome != "denied" && outcome != "invalid_args" {
		m.seconds.WithLabelValues(server).Observe(d.Seconds())
	}
}

func (m *toolMetrics) ServerState(server string, s tools.State) {
	for _, st := range []tools.State{tools.StateConnecting, tools.StateUp, tools.StateDown, tools.StateStopped} {
		v := 0.0
		if st == s {
			v = 1
		}
		m.state.WithLabelValues(server, string(st)).Set(v)
	}
}

func (m *toolMetrics) Approval(server, tool, decision string) {
	m.approvals.WithLabelValues(server, tool, decision).Inc()
}

// toolsInfo is what /tools reads; nil when no tool server is configured.
func (c *core) toolsInfo() router.ToolsInfo {
	if c.tools == nil {
		return nil
	}
	return toolsInfo{c.tools}
}

// approvalSweep is how often each process looks for approvals whose time ran out.
const approvalSweep = time.Second

// enqueueExpiry queues the run that tells an approval's waiting turn that its time ran out.
func (c *core) enqueueExpiry(ctx context.Context, convKey, approvalID string) error {
	k, ok := conv.ParseKey(convKey)
	if !ok {
		return fmt.Errorf("approval %s: unreadable conversation key", approvalID)
	}
	env := &runs.Envelope{
		RunID: runs.NewRunID(), Kind: runs.KindClarificationAnswer, Conv: k,
		Identity:        conv.Identity{Platform: k.Platform, ChannelUserID: runs.SystemUser, DisplayName: "Switchboard"},
		ClarificationID: approvalID, Text: runs.DecisionExpired, CreatedAt: time.Now(),
	}
	c.signer.Sign(env)
	return c.queue.Enqueue(ctx, env)
}
