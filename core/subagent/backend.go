package subagent

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/agent"
)

// DefaultStructuredNudgeRetries is a backend's nudge budget when its Config leaves it unset.
const DefaultStructuredNudgeRetries = 1

// Default provider names of the two backends.
const (
	SpawnProviderName = "spawn"
	ForkProviderName  = "fork"
)

// Config configures a spawn or fork backend.
type Config struct {
	// ProviderName is the name the backend registers under (default "spawn" / "fork").
	ProviderName string
	// StructuredNudgeRetries is how many times a structured child that finished without
	// reporting is re-prompted: nil means DefaultStructuredNudgeRetries; it must be ≥ 0.
	StructuredNudgeRetries *int
}

// Backend is an in-process provider: spawn (a fresh child) or fork (a child seeded with the
// parent's completed turns). The two differ only in that seed. A backend holds one
// structured-runtime acquisition from construction to Close.
type Backend struct {
	name    string
	fork    bool
	rt      *agent.Runtime
	retries int
	acq     *StructuredAcquisition
	close   sync.Once
}

var _ Provider = (*Backend)(nil)

// NewSpawn returns the spawn backend on rt: each run is a fresh, unseeded child. It returns a
// *ConfigError for a negative StructuredNudgeRetries.
func NewSpawn(rt *agent.Runtime, cfg Config) (*Backend, error) {
	return newBackend(rt, cfg, SpawnProviderName, false)
}

// NewFork returns the fork backend on rt: each run's child is seeded with the parent's
// completed-turn prefix (the parent's open turn left out). It returns a *ConfigError for a
// negative StructuredNudgeRetries.
func NewFork(rt *agent.Runtime, cfg Config) (*Backend, error) {
	return newBackend(rt, cfg, ForkProviderName, true)
}

func newBackend(rt *agent.Runtime, cfg Config, defaultName string, fork bool) (*Backend, error) {
	b := &Backend{name: cfg.ProviderName, fork: fork, rt: rt, retries: DefaultStructuredNudgeRetries}
	if b.name == "" {
		b.name = defaultName
	}
	if p := cfg.StructuredNudgeRetries; p != nil {
		if *p < 0 {
			return nil, &ConfigError{Backend: b.name, Field: "structuredNudgeRetries",
				Reason: fmt.Sprintf("must be a non-negative integer, got %d", *p)}
		}
		b.retries = *p
	}
	acq, err := AcquireStructuredRuntime(rt)
	if err != nil {
		return nil, fmt.Errorf("subagent: %s backend: %w", b.name, err)
	}
	b.acq = acq
	return b, nil
}

// Name is the provider name.
func (b *Backend) Name() string { return b.name }

// Capabilities: output schema and depth limit, no tool filter.
func (b *Backend) Capabilities() Capabilities {
	return Capabilities{OutputSchema: true, DepthLimit: true, ToolFilter: false}
}

// InheritsParentContext is true for fork (the child sees the parent's completed turns).
func (b *Backend) InheritsParentContext() bool { return b.fork }

// StructuredNudgeRetries is the backend's validated nudge budget.
func (b *Backend) StructuredNudgeRetries() int { return b.retries }

// Start starts one run (see StartInProcessRun). It refuses a request needing a capability the
// backend lacks with an *UnsupportedCapabilityError, as the service does.
func (b *Backend) Start(ctx context.Context, req StartRequest) (*Run, error) {
	if err := gate(b, req); err != nil {
		return nil, err
	}
	var from *agent.Session
	if b.fork && req.Parent != nil {
		// The completed-turn prefix (agent.CompletedPrefix), shared with the parent's log.
		from = req.Parent.Session()
	}
	return StartInProcessRun(ctx, b.rt, req, InProcessRunOptions{ProviderName: b.name, ForkFrom: from, StructuredNudgeRetries: b.retries})
}

// Close releases the backend's structured-runtime acquisition. Runs already started hold their
// own and are unaffected. Idempotent.
func (b *Backend) Close() { b.close.Do(b.acq.Release) }
