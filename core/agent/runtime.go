// Package agent is the agent runtime: it creates agents, keeps a registry of them, hosts the
// hook chains that shape requests, continue turns and gate tool calls, and runs each agent's
// turn loop against a model provider, writing everything that happens to a frozen session log.
//
// Its vocabulary and semantics are those of SUBAGENT-SPEC.md ("Vocabulary"): Send enqueues
// synchronously, WhenIdle returns at the next running→idle transition after queued work,
// Cancel clears the queue and aborts the current step, Dispose stops the loop for good.
package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// ErrDuplicateTool is returned when a tool name is registered twice.
var ErrDuplicateTool = errors.New("agent: a tool with this name is already registered")

// ErrDuplicateAgent is returned when Create is given an agent id already in the registry.
var ErrDuplicateAgent = errors.New("agent: an agent with this id already exists")

// Runtime creates and hosts agents. The zero value is not usable; call NewRuntime.
type Runtime struct {
	provider llm.Provider
	log      *slog.Logger
	idPrefix string
	idSeq    atomic.Uint64

	mu     sync.RWMutex
	agents map[string]*Agent
	tools  map[string]*Tool
	order  []string // tool names in registration order

	requestHooks chain[RequestHook]
	contHooks    chain[ContinuationHook]
	preToolHooks chain[PreToolHook]
	listeners    chain[Listener]
}

// RuntimeOption configures a Runtime.
type RuntimeOption func(*Runtime)

// WithLogger sets the logger for contained failures (default slog.Default()).
func WithLogger(l *slog.Logger) RuntimeOption { return func(r *Runtime) { r.log = l } }

// NewRuntime returns a runtime whose agents talk to provider.
func NewRuntime(provider llm.Provider, opts ...RuntimeOption) *Runtime {
	var b [6]byte
	_, _ = rand.Read(b[:])
	r := &Runtime{
		provider: provider,
		log:      slog.Default(),
		idPrefix: hex.EncodeToString(b[:]),
		agents:   map[string]*Agent{},
		tools:    map[string]*Tool{},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Provider is the model provider agents of this runtime use.
func (r *Runtime) Provider() llm.Provider { return r.provider }

// Logger is the runtime's logger.
func (r *Runtime) Logger() *slog.Logger { return r.log }

// NewID returns a fresh id with the given prefix, unique across runtimes and processes.
func (r *Runtime) NewID(prefix string) string {
	return prefix + "_" + r.idPrefix + strconv.FormatUint(r.idSeq.Add(1), 36)
}

// RegisterTool makes a tool available to agents. The returned registration removes it.
func (r *Runtime) RegisterTool(t Tool) (*Registration, error) {
	if t.Name == "" || t.Execute == nil {
		return nil, fmt.Errorf("agent: register tool %q: a tool needs a name and Execute", t.Name)
	}
	if len(t.Parameters) > 0 && !t.RawArguments {
		p, err := schema.Parse(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("agent: register tool %q: parameters: %w", t.Name, err)
		}
		t.parsed = p
	}
	tp := &t
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return nil, fmt.Errorf("agent: register tool %q: %w", t.Name, ErrDuplicateTool)
	}
	r.tools[t.Name] = tp
	r.order = append(r.order, t.Name)
	return &Registration{remove: func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.tools[t.Name] != tp {
			return
		}
		delete(r.tools, t.Name)
		for i, n := range r.order {
			if n == t.Name {
				r.order = append(r.order[:i:i], r.order[i+1:]...)
				break
			}
		}
	}}, nil
}

// tool looks a registered tool up by name.
func (r *Runtime) tool(name string) *Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[name]
}

// toolSpecs lists the tools an agent may see: all registered ones, or only those named in
// allow when allow is not nil.
func (r *Runtime) toolSpecs(allow []string) []llm.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []llm.ToolSpec
	for _, n := range r.order {
		if allow != nil && !contains(allow, n) {
			continue
		}
		out = append(out, r.tools[n].spec())
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// UseRequestHook adds a request-shaping hook; prepend makes it the outermost.
func (r *Runtime) UseRequestHook(h RequestHook, prepend bool) *Registration {
	return r.requestHooks.add(h, prepend)
}

// UseContinuationHook adds a turn-continuation hook; prepend makes it the outermost.
func (r *Runtime) UseContinuationHook(h ContinuationHook, prepend bool) *Registration {
	return r.contHooks.add(h, prepend)
}

// UsePreToolHook adds a tool pre-execute hook; prepend makes it the outermost.
func (r *Runtime) UsePreToolHook(h PreToolHook, prepend bool) *Registration {
	return r.preToolHooks.add(h, prepend)
}

// Listen adds a listener for every event written by any agent of this runtime.
func (r *Runtime) Listen(l Listener) *Registration { return r.listeners.add(l, false) }

// Get looks an agent up by id.
func (r *Runtime) Get(id string) (*Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[id]
	return a, ok
}

// List returns the registered agents, in no particular order.
func (r *Runtime) List() []*Agent {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Agent, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a)
	}
	return out
}

func (r *Runtime) unregister(a *Agent) {
	r.mu.Lock()
	if r.agents[a.id] == a {
		delete(r.agents, a.id)
	}
	r.mu.Unlock()
}

func (r *Runtime) emit(a *Agent, e *Event) {
	for _, l := range r.listeners.list() {
		r.safeListen(l, a, e)
	}
}

func (r *Runtime) safeListen(l Listener, a *Agent, e *Event) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("agent: event listener panicked; contained", "agent", a.id, "kind", e.Kind, "panic", fmt.Sprint(p))
		}
	}()
	l(a, *e)
}
