package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrUnknownProvider means a request named a provider the Providers does not know: a
// configuration mistake, never temporary.
var ErrUnknownProvider = errors.New("llm: no model provider of that name")

// Providers is a Provider that hands each call to the provider its Request names: a default for
// requests that name none, and named ones (a cheaper model for sub-agents, a vision model, a
// local server). Safe for concurrent use when its providers are.
type Providers struct {
	def   Provider
	named map[string]Provider
}

var _ Provider = (*Providers)(nil)

// NewProviders returns a Providers answering requests without a Provider with def, and those
// naming one with named[name]. def must not be nil; nil entries of named are left out, and so is
// the name "", which always means def. The map is copied.
func NewProviders(def Provider, named map[string]Provider) *Providers {
	if def == nil {
		panic("llm: NewProviders: nil default provider")
	}
	p := &Providers{def: def, named: make(map[string]Provider, len(named))}
	for name, np := range named {
		if name != "" && np != nil {
			p.named[name] = np
		}
	}
	return p
}

// Name reports the default provider's name.
func (p *Providers) Name() string { return p.def.Name() }

// Names returns the named providers' names, sorted.
func (p *Providers) Names() []string { return slices.Sorted(maps.Keys(p.named)) }

// Stream sends req to the provider req.Provider names, the default when it names none, and
// returns what that provider returns. A name it does not know fails at once with an error
// wrapping ErrUnknownProvider, which Temporary reports as not temporary.
func (p *Providers) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	if req.Provider == "" {
		return p.def.Stream(ctx, req, onDelta)
	}
	np, ok := p.named[req.Provider]
	if !ok {
		known := strings.Join(p.Names(), ", ")
		if known == "" {
			known = "none"
		}
		return Response{}, fmt.Errorf("%w: %q (named providers: %s)", ErrUnknownProvider, req.Provider, known)
	}
	return np.Stream(ctx, req, onDelta)
}
