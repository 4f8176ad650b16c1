package subagent

import (
	"errors"
	"fmt"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

// Error codes, as the reference names them; every typed error reports its own through Code.
const (
	CodeNoProvider            = "NO_PROVIDER"
	CodeDuplicateProvider     = "DUPLICATE_PROVIDER"
	CodeUnsupportedCapability = "UNSUPPORTED_CAPABILITY"
)

// Sentinels for errors.Is; the typed errors below match them.
var (
	ErrNoProvider            = errors.New("subagent: no such provider")
	ErrDuplicateProvider     = errors.New("subagent: provider already registered")
	ErrUnsupportedCapability = errors.New("subagent: capability not supported by the provider")
)

// NoProviderError is returned when a request names a provider the service does not hold.
type NoProviderError struct{ Name string }

func (e *NoProviderError) Error() string {
	return fmt.Sprintf("subagent: no provider named %q", e.Name)
}

// Is matches ErrNoProvider.
func (e *NoProviderError) Is(target error) bool { return target == ErrNoProvider }

// Code is NO_PROVIDER.
func (e *NoProviderError) Code() string { return CodeNoProvider }

// DuplicateProviderError is returned when a provider name is registered twice.
type DuplicateProviderError struct{ Name string }

func (e *DuplicateProviderError) Error() string {
	return fmt.Sprintf("subagent: a provider named %q is already registered", e.Name)
}

// Is matches ErrDuplicateProvider.
func (e *DuplicateProviderError) Is(target error) bool { return target == ErrDuplicateProvider }

// Code is DUPLICATE_PROVIDER.
func (e *DuplicateProviderError) Code() string { return CodeDuplicateProvider }

// UnsupportedCapabilityError is returned, before the provider starts anything, when a request
// needs a capability the provider lacks. Capability is "outputSchema", "depthLimit" or
// "toolFilter" — the first lacking one in that order.
type UnsupportedCapabilityError struct {
	Provider   string
	Capability string
}

func (e *UnsupportedCapabilityError) Error() string {
	return fmt.Sprintf("subagent: provider %q does not support %s", e.Provider, e.Capability)
}

// Is matches ErrUnsupportedCapability.
func (e *UnsupportedCapabilityError) Is(target error) bool { return target == ErrUnsupportedCapability }

// Code is UNSUPPORTED_CAPABILITY.
func (e *UnsupportedCapabilityError) Code() string { return CodeUnsupportedCapability }

// DepthError is returned when a child would be deeper than the request's MaxDepth. No child
// exists when it is returned.
type DepthError struct {
	AttemptedDepth int
	MaxDepth       int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("subagent depth %d exceeds maxDepth %d", e.AttemptedDepth, e.MaxDepth)
}

// OutputSchemaError is returned when a request's output schema is not valid JSON or strays from
// the supported subset. It lists every violation with its path; no child exists when it is
// returned.
type OutputSchemaError struct {
	Provider   string
	Violations []schema.Violation
}

func (e *OutputSchemaError) Error() string {
	return fmt.Sprintf("subagent: %s: unsupported output schema: %s", e.Provider, schema.Join(e.Violations))
}

// ConfigError is returned by NewSpawn and NewFork for a config value out of range.
type ConfigError struct {
	Backend string
	Field   string
	Reason  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("subagent: %s config: %s %s", e.Backend, e.Field, e.Reason)
}
