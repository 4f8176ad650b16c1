package lead

import (
	"context"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// Caller is who a run works for, taken from the verified envelope — never from model output.
// Tools read it with CallerFrom to decide what the user may do.
type Caller struct {
	RunID         string
	Conv          conv.Key
	Platform      string
	ChannelUserID string
	DisplayName   string
	Admin         bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller a tool runs for; ok is false outside a run.
func CallerFrom(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

func callerOf(env *runs.Envelope) Caller {
	return Caller{
		RunID:         env.RunID,
		Conv:          env.Conv,
		Platform:      env.Identity.Platform,
		ChannelUserID: env.Identity.ChannelUserID,
		DisplayName:   env.Identity.DisplayName,
		Admin:         env.Identity.Admin,
	}
}

// identityOf is the identity tool calls of a run carry: the verified envelope's.
func identityOf(env *runs.Envelope) tools.Identity {
	return tools.Identity{
		Platform:      env.Identity.Platform,
		ChannelUserID: env.Identity.ChannelUserID,
		DisplayName:   env.Identity.DisplayName,
		Conversation:  env.Conv.String(),
		RunID:         env.RunID,
		Admin:         env.Identity.Admin,
	}
}
