package lead

import (
	"context"
	"slices"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/profile"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/subagent"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// place is what a run's profile decides for it.
type place struct {
	prof profile.Profile
	why  string
}

// placer resolves each run's place and says what the place gives the lead: its system prompt
// and which of the Team's own tools it is offered.
type placer struct {
	opts Options
	// tools are the Team's own tools (delegate, ask_clarification, Options.ExtraTools), in the
	// order NewTeam registered them.
	tools []string
}

// of resolves the profile of the place env comes from: the configured routes', or, with no
// profiles configured, the one the Team's options describe.
func (pl *placer) of(env *runs.Envelope) place {
	if pl.opts.Profiles == nil {
		return place{prof: pl.defaultProfile(), why: "no profiles configured"}
	}
	res := pl.opts.Profiles.Resolve(profile.Facts{Key: env.Conv, Direct: env.Direct, User: env.Identity.ChannelUserID})
	return place{prof: res.Profile, why: res.Why}
}

// defaultProfile is the Team's options as a profile: every tool, no cut of the history.
func (pl *placer) defaultProfile() profile.Profile {
	depth := pl.opts.MaxDepth
	if pl.opts.NoSubagents {
		depth = 0
	}
	return profile.Profile{Name: profile.Default, SystemPrompt: pl.opts.System, Model: pl.opts.Model,
		Subagents: profile.Subagents{MaxDepth: depth, MaxConcurrent: pl.opts.MaxConcurrent}}
}

// system is the lead's system prompt in p.
func (pl *placer) system(p place) string {
	if p.prof.SystemPrompt != "" {
		return p.prof.SystemPrompt
	}
	return pl.opts.System
}

// modelIn is the model a conversation's run uses in p: the conversation's /model choice when
// the profile allows it, else the profile's.
func modelIn(p place, chosen string) string {
	if chosen != "" && p.prof.AllowsModel(chosen) {
		return chosen
	}
	return p.prof.Model
}

// scoped narrows id to p's tools.
func scoped(id tools.Identity, p place) tools.Identity {
	if p.prof.Tools != nil {
		id.Scope = &tools.Scope{Globs: p.prof.Tools}
	}
	return id
}

// builtins are the Team's own tools offered to the lead in p: without delegate where p has no
// subagents.
func (pl *placer) builtins(p place) []string {
	if pl.opts.Profiles == nil || p.prof.Subagents.MaxDepth > 0 || !slices.Contains(pl.tools, subagent.DelegateToolName) {
		return pl.tools
	}
	out := make([]string, 0, len(pl.tools))
	for _, n := range pl.tools {
		if n != subagent.DelegateToolName {
			out = append(out, n)
		}
	}
	return out
}

// runOf is the run an agent (a lead or one of its children) works for, if any.
func (t *Team) runOf(a *agent.Agent) *runState {
	if a == nil {
		return nil
	}
	v, ok := t.runs.Load(a.ID())
	if !ok {
		return nil
	}
	return v.(*runState)
}

// subagentLimits are the delegation bounds of the run parent works for (its profile's).
func (t *Team) subagentLimits(parent *agent.Agent) (maxConcurrent, maxDepth int, ok bool) {
	rs := t.runOf(parent)
	if rs == nil || t.opts.Profiles == nil {
		return 0, 0, false
	}
	s := rs.place.prof.Subagents
	return s.MaxConcurrent, s.MaxDepth, true
}

// routeProvider sends every request of a run's agents to its profile's provider.
func (t *Team) routeProvider(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
	if rs := t.runOf(a); rs != nil {
		req.Provider = rs.place.prof.Provider
	}
	return next(ctx, req)
}

// lastTurns keeps the events of history's last n turns (all when n ≤ 0), numbered from 0 as
// a seed must be. It copies only when it cuts.
func lastTurns(history []agent.Event, n int) []agent.Event {
	if n <= 0 || len(history) == 0 {
		return history
	}
	seen, cut := 0, -1
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Kind != agent.KindTurnStart {
			continue
		}
		if seen++; seen == n {
			cut = i
			break
		}
	}
	if cut <= 0 {
		return history
	}
	out := make([]agent.Event, len(history)-cut)
	copy(out, history[cut:])
	for i := range out {
		out[i].Seq = i
	}
	return out
}
