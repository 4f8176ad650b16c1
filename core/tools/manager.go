// Package tools offers the tools of MCP servers to the agents, on the official MCP Go SDK: it
// connects and supervises the configured servers (stdio processes and streamable-HTTP
// endpoints), offers each tool as <server>__<tool> with the server's description and input
// schema, checks arguments against that schema, and calls the tool as the run's verified user
// (Identity, in the request's _meta and, for HTTP servers, in signed headers). The policy says
// who may use which tool and which calls wait for a person's approval; a caller never sees a
// tool it may not use, in its own runs or its subagents'.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// Metrics receives what the manager measures; cmd/bot backs it with Prometheus.
type Metrics interface {
	// Call records one call: outcome is ok, error (the tool said isError), failed (the server
	// or the connection failed), timeout, invalid_args, denied or cancelled.
	Call(server, tool, outcome string, d time.Duration)
	// ServerState records a server's new state.
	ServerState(server string, s State)
	// Approval records a decision: approved, denied, expired or refused.
	Approval(server, tool, decision string)
}

type nopMetrics struct{}

func (nopMetrics) Call(string, string, string, time.Duration) {}
func (nopMetrics) ServerState(string, State)                  {}
func (nopMetrics) Approval(string, string, string)            {}

// Options are the manager's collaborators.
type Options struct {
	Logger  *slog.Logger
	Metrics Metrics
	// Version is sent as the client's version in initialize.
	Version string
	// Transport carries HTTP servers' requests (http.DefaultTransport when nil).
	Transport http.RoundTripper
	Now       func() time.Time
}

// Manager holds the configured servers and their tools. Start it once; Close stops every
// server (every stdio process included). Safe for concurrent use.
type Manager struct {
	cfg     Config
	opts    Options
	log     *slog.Logger
	met     Metrics
	pol     *policy
	servers []*server
	byName  map[string]*server

	mu     sync.Mutex
	offer  map[string]*offered // by offered name
	rt     *agent.Runtime
	regs   map[string]*agent.Registration
	specs  map[string]string // the spec each registration was made with
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

// New returns a manager that has not connected anything yet.
func New(cfg Config, opts Options) *Manager {
	cfg = cfg.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{cfg: cfg, opts: opts, log: opts.Logger, met: opts.Metrics, pol: newPolicy(cfg),
		byName: map[string]*server{}, offer: map[string]*offered{}, regs: map[string]*agent.Registration{}, specs: map[string]string{}}
	for _, sc := range cfg.Servers {
		s := newServer(m, sc)
		m.servers = append(m.servers, s)
		m.byName[sc.Name] = s
	}
	return m
}

func (m *Manager) now() time.Time { return m.opts.Now() }

// ApprovalTTL is how long an approval waits for its decision.
func (m *Manager) ApprovalTTL() time.Duration { return m.cfg.ApprovalTTL }

// Start connects every server in the background and returns at once: a server that is down
// is retried with backoff, and its tools are offered once it is up.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil || m.closed {
		return
	}
	ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, s := range m.servers {
		m.met.ServerState(s.cfg.Name, StateConnecting)
		m.wg.Go(func() { s.run(ctx) })
	}
}

// Close disconnects every server and stops every stdio server's processes, then returns.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
}

// Reload reconnects every server (and re-reads their secret files).
func (m *Manager) Reload() {
	for _, s := range m.servers {
		signal(s.reload)
	}
}

// Attach registers the offered tools on rt and keeps them in step with the servers, and adds
// the hooks that keep each agent's requests to the tools its caller may use. The function
// returned undoes it.
func (m *Manager) Attach(rt *agent.Runtime) func() {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	m.offerChanged()
	reg := rt.UseRequestHook(m.filterRequest, false)
	return func() {
		reg.Remove()
		m.mu.Lock()
		defer m.mu.Unlock()
		for n, r := range m.regs {
			r.Remove()
			delete(m.regs, n)
			delete(m.specs, n)
		}
		m.rt = nil
	}
}

// offerChanged rebuilds the offer from the servers' lists and registers or removes the
// runtime's tools to match.
func (m *Manager) offerChanged() {
	m.mu.Lock()
	defer m.mu.Unlock()
	offer := map[string]*offered{}
	for _, s := range m.servers {
		s.mu.Lock()
		for i := range s.tools {
			o := s.tools[i]
			if _, clash := offer[o.Name]; clash {
				m.log.Warn("tools: skipping a tool whose offered name another server's tool has", "server", s.cfg.Name, "tool", o.Tool, "name", o.Name)
				continue
			}
			offer[o.Name] = &o
		}
		s.mu.Unlock()
	}
	m.offer = offer
	if m.rt == nil {
		return
	}
	for name, reg := range m.regs {
		if o, ok := offer[name]; !ok || m.specs[name] != specOf(o) {
			reg.Remove()
			delete(m.regs, name)
			delete(m.specs, name)
		}
	}
	for name, o := range offer {
		if _, ok := m.regs[name]; ok {
			continue
		}
		reg, err := m.rt.RegisterTool(agent.Tool{Name: name, Description: o.Description, Parameters: o.Schema,
			RawArguments: true, Parallel: true, Execute: m.execute})
		if err != nil {
			m.log.Warn("tools: offering a tool failed", "name", name, "err", err)
			continue
		}
		m.regs[name], m.specs[name] = reg, specOf(o)
	}
}

// specOf is what the model is told of a tool: a relist that changes it registers it anew.
func specOf(o *offered) string { return o.Description + "\x00" + string(o.Schema) }

// lookup returns the offered tool of that name, or nil.
func (m *Manager) lookup(name string) *offered {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offer[name]
}

// Owns reports whether name is one of the offered tools.
func (m *Manager) Owns(name string) bool { return m.lookup(name) != nil }

func depthOf(a *agent.Agent) int {
	if a == nil {
		return 0
	}
	return a.Options().SubagentDepth
}

// filterRequest keeps in an agent's request only the server tools its run's caller may use at
// its depth; the model never sees the others. Other tools pass untouched.
func (m *Manager) filterRequest(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
	id, hasID := IdentityFrom(ctx)
	depth := -1
	var keep []llm.ToolSpec
	changed := false
	for _, spec := range req.Tools {
		if o := m.lookup(spec.Name); o != nil {
			if depth < 0 {
				depth = depthOf(a)
			}
			if !hasID || !m.pol.forAgent(spec.Name, id, true, depth).Allowed {
				changed = true
				continue
			}
		}
		keep = append(keep, spec)
	}
	if changed {
		req.Tools = keep
	}
	return next(ctx, req)
}

// Names lists, sorted, the offered tools id may use at depth (0 for the lead).
func (m *Manager) Names(id Identity, depth int) []string {
	m.mu.Lock()
	names := make([]string, 0, len(m.offer))
	for n := range m.offer {
		names = append(names, n)
	}
	m.mu.Unlock()
	out := names[:0]
	for _, n := range names {
		if m.pol.forAgent(n, id, true, depth).Allowed {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ApprovalRequest is a call that waits for a person's decision.
type ApprovalRequest struct {
	// Name is the offered name; Server and Tool say whose tool it is.
	Name, Server, Tool string
	// Args are the model's arguments, checked against the schema.
	Args json.RawMessage
	// Mode is ApprovalAlways (the requester decides) or ApprovalAdmin.
	Mode     Approval
	Identity Identity
}

// Approver takes a call that needs approval: it returns the result the agent records now (the
// decision's result, or a note that the run waits for it).
type Approver func(ctx context.Context, call agent.ToolCall, req ApprovalRequest) agent.ToolResult

type approverKey struct{}

// WithApprover returns ctx whose tool calls that need approval go to ap.
func WithApprover(ctx context.Context, ap Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, ap)
}

// execute is every offered tool's Execute: policy, arguments, approval, then the call.
func (m *Manager) execute(ctx context.Context, call agent.ToolCall) agent.ToolResult {
	o := m.lookup(call.Name)
	if o == nil {
		return agent.Errorf(agent.CodeFailed, "the tool %s is not available right now (its server is down or no longer offers it)", call.Name)
	}
	id, ok := IdentityFrom(ctx)
	if !ok {
		m.met.Call(o.Server, o.Tool, "denied", 0)
		return agent.Errorf(agent.CodeDenied, "tools run only for a verified user")
	}
	d := m.pol.forAgent(call.Name, id, true, depthOf(call.Agent))
	if !d.Allowed {
		m.met.Call(o.Server, o.Tool, "denied", 0)
		m.log.Info("tools: refused a call the policy does not allow", "tool", call.Name, "platform", id.Platform, "user", id.ChannelUserID, "run", id.RunID)
		return agent.Errorf(agent.CodeDenied, "this user may not use %s", call.Name)
	}
	args, err := o.checkArgs(call.Arguments)
	if err != nil {
		m.met.Call(o.Server, o.Tool, "invalid_args", 0)
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: %v", err)
	}
	if d.Approval == ApprovalAlways || d.Approval == ApprovalAdmin {
		ap, _ := ctx.Value(approverKey{}).(Approver)
		if ap == nil {
			m.met.Call(o.Server, o.Tool, "denied", 0)
			return agent.Errorf(agent.CodeDenied, "%s needs a person's approval, which cannot be asked here", call.Name)
		}
		raw, _ := json.Marshal(args)
		return ap(ctx, call, ApprovalRequest{Name: o.Name, Server: o.Server, Tool: o.Tool, Args: raw, Mode: d.Approval, Identity: id})
	}
	return m.invoke(ctx, o, args, id)
}

// RunApproved calls an offered tool whose approval was given, as id. The policy is applied
// again (the user's rights may have changed while the call waited); approval is not asked.
func (m *Manager) RunApproved(ctx context.Context, name string, args json.RawMessage, id Identity) agent.ToolResult {
	o := m.lookup(name)
	if o == nil {
		return agent.Errorf(agent.CodeFailed, "the tool %s is not available right now (its server is down or no longer offers it)", name)
	}
	if !m.pol.forAgent(name, id, true, 0).Allowed {
		m.met.Call(o.Server, o.Tool, "denied", 0)
		return agent.Errorf(agent.CodeDenied, "this user may not use %s", name)
	}
	obj, err := o.checkArgs(args)
	if err != nil {
		m.met.Call(o.Server, o.Tool, "invalid_args", 0)
		return agent.Errorf(agent.CodeInvalidArgs, "invalid arguments: %v", err)
	}
	return m.invoke(ctx, o, obj, id)
}

// invoke makes the call, with its timeout, the identity in _meta (and headers, over HTTP). A
// session the server no longer knows is reconnected and the call made once more: the server
// refused it unseen.
func (m *Manager) invoke(ctx context.Context, o *offered, args map[string]any, id Identity) agent.ToolResult {
	s := m.byName[o.Server]
	start := m.now()
	cctx, cancel := context.WithTimeout(WithIdentity(ctx, id), o.timeout)
	defer cancel()
	var res *mcp.CallToolResult
	var err error
	var lost *mcp.ClientSession
	for try := 0; try < 2; try++ {
		sess := s.current(cctx, lost, time.Duration(try)*m.cfg.ConnectTimeout)
		if sess == nil {
			err = errNotConnected
			break
		}
		res, err = sess.CallTool(cctx, &mcp.CallToolParams{Name: o.Tool, Arguments: args, Meta: mcp.Meta{MetaKey: id.meta()}})
		if !errors.Is(err, mcp.ErrSessionMissing) {
			break
		}
		m.log.Info("tools: the server lost the session; reconnecting", "server", o.Server)
		lost = sess
		signal(s.reload)
	}
	d := m.now().Sub(start)
	outcome, result := "ok", agent.ToolResult{}
	switch {
	case err == nil && res == nil:
		outcome, result = "failed", agent.Errorf(agent.CodeFailed, "the tool server %s answered nothing", o.Server)
	case err == nil && res.IsError:
		outcome, result = "error", toResult(res, m.cfg.MaxResultBytes)
	case err == nil:
		result = toResult(res, m.cfg.MaxResultBytes)
	case ctx.Err() != nil:
		outcome, result = "cancelled", agent.Errorf(agent.CodeFailed, "the call was cancelled")
	case errors.Is(err, errNotConnected):
		outcome, result = "failed", agent.Errorf(agent.CodeFailed, "the tool server %s is not connected right now; try again later or do without it", o.Server)
	case cctx.Err() != nil:
		outcome, result = "timeout", agent.Errorf(agent.CodeFailed, "%s did not answer within %s", o.Name, o.timeout)
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		outcome, result = "failed", agent.Errorf(agent.CodeFailed, "the tool server %s closed the connection during the call (it may have crashed); it is being restarted", o.Server)
	default:
		outcome, result = "failed", agent.Errorf(agent.CodeFailed, "the call failed: %s", cutUTF8(scrub(err, s.cfg.URL).Error(), 300))
	}
	m.met.Call(o.Server, o.Tool, outcome, d)
	m.log.Debug("tools: call", "tool", o.Name, "outcome", outcome, "duration", d, "run", id.RunID)
	return result
}

var errNotConnected = errors.New("tools: the server is not connected")

// ServerStatus is one server as /tools shows it.
type ServerStatus struct {
	Name      string
	Transport string // stdio or http
	State     State
	Since     time.Time
	// Reason says why it is down (no secrets).
	Reason string
	// Tools are the offered names; Skipped say why malformed tools were left out.
	Tools   []string
	Skipped []string
}

// Status lists every server, in configuration order.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.cfg.Name, Transport: "http", State: s.state, Since: s.since, Reason: s.reason,
			Skipped: append([]string(nil), s.skipped...)}
		if len(s.cfg.Command) > 0 {
			st.Transport = "stdio"
		}
		for _, o := range s.tools {
			st.Tools = append(st.Tools, o.Name)
		}
		s.mu.Unlock()
		sort.Strings(st.Tools)
		out = append(out, st)
	}
	return out
}

// PolicyText describes the policy for admins, a rule a line.
func (m *Manager) PolicyText() []string {
	var out []string
	for i, r := range m.cfg.Policy {
		allow := strings.Join(r.Allow, ", ")
		if allow == "" {
			allow = AllowEveryone
		}
		appr := r.Approval
		if appr == "" {
			appr = ApprovalNever
		}
		out = append(out, fmt.Sprintf("%d. %s — allow: %s; approval: %s", i+1, strings.Join(r.Tools, ", "), allow, appr))
	}
	out = append(out, "Tools no rule names: everyone, no approval. Subagents: "+strings.Join(m.cfg.Subagents, ", ")+".")
	return out
}

// Decided records an approval's decision, for audit (one log line with who asked, who decided
// and what) and metrics. The arguments are not logged: they may hold secrets.
func (m *Manager) Decided(req ApprovalRequest, decision, decidedBy string) {
	m.met.Approval(req.Server, req.Tool, decision)
	m.log.Info("tools: approval decided", "decision", decision, "tool", req.Name, "platform", req.Identity.Platform,
		"requester", req.Identity.ChannelUserID, "decided_by", decidedBy, "conversation", req.Identity.Conversation,
		"run", req.Identity.RunID, "mode", req.Mode)
}
