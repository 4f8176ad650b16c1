package subagent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Provider starts child runs of one kind. A provider is registered with a Service by its name.
type Provider interface {
	Name() string
	Capabilities() Capabilities
	// InheritsParentContext reports whether the child sees the parent's conversation.
	InheritsParentContext() bool
	// Start starts a run; ctx cancels the run when it ends.
	Start(ctx context.Context, req StartRequest) (*Run, error)
}

// EventKind names a service event.
type EventKind string

// Service event kinds.
const (
	EventStart EventKind = "subagent/start"
	EventEnd   EventKind = "subagent/end"
)

// Event is a service event: a run started (subagent/start) or settled (subagent/end).
type Event struct {
	Kind     EventKind
	Provider string
	// ID is the run's id.
	ID string
	// ParentID is the delegating agent's id ("" without a parent); Name the request's label.
	ParentID string
	Name     string
	// CallID is the request's: the parent's tool call that started the run ("" when none did).
	CallID string
	// StopReason, Detail, LastAssistantMessage and Structured are set on subagent/end;
	// LastAssistantMessage is the run's Output, Structured the captured value as JSON text.
	StopReason           StopReason
	Detail               string
	LastAssistantMessage string
	Structured           string
}

// Listener receives service events, synchronously: it must return quickly. A listener that
// returns an error or panics is logged and otherwise ignored; it never breaks a run.
type Listener func(Event) error

// Service holds providers by name, gates requests by capability, and tells listeners when runs
// start and end. Safe for concurrent use.
type Service struct {
	log *slog.Logger

	mu        sync.RWMutex
	providers map[string]Provider
	listeners []*listenerEntry
}

type listenerEntry struct{ fn Listener }

// NewService returns an empty service logging contained failures to log (slog.Default() if nil).
func NewService(log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{log: log, providers: map[string]Provider{}}
}

// Register adds a provider under its name; a name already held is a *DuplicateProviderError.
func (s *Service) Register(p Provider) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.providers[p.Name()]; dup {
		return &DuplicateProviderError{Name: p.Name()}
	}
	s.providers[p.Name()] = p
	return nil
}

// Unregister removes the provider registered under name, if any.
func (s *Service) Unregister(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.providers, name)
}

// Provider looks a provider up by name.
func (s *Service) Provider(name string) (Provider, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.providers[name]
	return p, ok
}

// Listen adds a listener; the returned function removes it.
func (s *Service) Listen(l Listener) (remove func()) {
	e := &listenerEntry{fn: l}
	s.mu.Lock()
	s.listeners = append(s.listeners, e)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.listeners {
			if x == e {
				s.listeners = append(s.listeners[:i:i], s.listeners[i+1:]...)
				return
			}
		}
	}
}

// Start starts a run with the named provider. An unknown name is a *NoProviderError; a request
// needing a capability the provider lacks is an *UnsupportedCapabilityError, returned before
// the provider starts anything. On success listeners get subagent/start, and subagent/end when
// the result settles (before Result returns to any waiter).
func (s *Service) Start(ctx context.Context, provider string, req StartRequest) (*Run, error) {
	p, ok := s.Provider(provider)
	if !ok {
		return nil, &NoProviderError{Name: provider}
	}
	if err := gate(p, req); err != nil {
		return nil, err
	}
	run, err := p.Start(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("subagent: start with %s: %w", provider, err)
	}
	base := Event{Provider: p.Name(), ID: run.ID(), Name: req.Name, CallID: req.CallID}
	if req.Parent != nil {
		base.ParentID = req.Parent.ID()
	}
	start := base
	start.Kind = EventStart
	s.emit(start)
	run.afterSettle(func(res Result) {
		end := base
		end.Kind, end.StopReason, end.Detail, end.LastAssistantMessage = EventEnd, res.StopReason, res.Detail, res.Output
		end.Structured = string(res.Structured)
		s.emit(end)
	})
	return run, nil
}

// gate refuses a request needing a capability p lacks, in the order outputSchema, depthLimit,
// toolFilter.
func gate(p Provider, req StartRequest) error {
	have, need := p.Capabilities(), req.needs()
	switch {
	case need.OutputSchema && !have.OutputSchema:
		return &UnsupportedCapabilityError{Provider: p.Name(), Capability: "outputSchema"}
	case need.DepthLimit && !have.DepthLimit:
		return &UnsupportedCapabilityError{Provider: p.Name(), Capability: "depthLimit"}
	case need.ToolFilter && !have.ToolFilter:
		return &UnsupportedCapabilityError{Provider: p.Name(), Capability: "toolFilter"}
	}
	return nil
}

func (s *Service) emit(e Event) {
	s.mu.RLock()
	ls := s.listeners // copy-on-write: Listen and its remover never change a published slice
	s.mu.RUnlock()
	for _, l := range ls {
		s.deliver(l.fn, e)
	}
}

func (s *Service) deliver(l Listener, e Event) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("subagent: event listener panicked; contained", "kind", e.Kind, "run", e.ID, "provider", e.Provider, "panic", fmt.Sprint(p))
		}
	}()
	if err := l(e); err != nil {
		s.log.Error("subagent: event listener failed; contained", "kind", e.Kind, "run", e.ID, "provider", e.Provider, "err", err)
	}
}
