package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/switchboard-bot/switchboard/channels/router"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/profile"
)

// profileSet builds the resolver of agent profiles from the configuration. The default profile
// is the top-level settings: llm.system_prompt, llm.model on the top-level endpoint, llm.vision,
// runs.history_turns, subagents.*, every tool the policy allows and any model. A configured
// profile naming a provider but no model takes the provider's model; one setting only one of
// its subagent limits takes the other from subagents.*.
func profileSet(cfg *config.Config) (*profile.Set, error) {
	top := profile.Subagents{MaxDepth: cfg.Subagents.MaxDepth, MaxConcurrent: cfg.Subagents.MaxConcurrent}
	def := profile.Profile{
		SystemPrompt: cfg.LLM.SystemPrompt,
		Model:        cfg.LLM.Model,
		Vision:       cfg.LLM.Vision,
		HistoryTurns: cfg.Runs.HistoryTurns,
		Subagents:    top,
	}
	partials := make(map[string]profile.Partial, len(cfg.Profiles))
	for name, p := range cfg.Profiles {
		part := profile.Partial{
			SystemPrompt: p.SystemPrompt, Model: p.Model, Provider: p.Provider,
			Models: p.Models, Tools: p.Tools, Vision: p.Vision, HistoryTurns: p.HistoryTurns,
		}
		if part.Model == "" && p.Provider != "" {
			// llm.model names a model of the top-level endpoint, not of this one.
			if e, ok := cfg.LLM.Endpoint(p.Provider); ok {
				part.Model = e.Model
			}
		}
		if s := p.Subagents; s != nil {
			sub := top
			if s.MaxDepth != nil {
				sub.MaxDepth = *s.MaxDepth
			}
			if s.MaxConcurrent != nil {
				sub.MaxConcurrent = *s.MaxConcurrent
			}
			part.Subagents = &sub
		}
		partials[name] = part
	}
	routes := make([]profile.Route, len(cfg.Routes))
	for i, r := range cfg.Routes {
		m := r.Match
		routes[i] = profile.Route{Profile: r.Profile, Match: profile.Match{
			Platform: m.Platform, Team: m.Team, Enterprise: m.Enterprise, Guild: m.Guild,
			Channel: m.Channel, User: m.User, DM: m.DM,
		}}
	}
	return profile.New(def, partials, routes)
}

// profileFacts lists what an operator checks of a profile, by name, in the order printed.
func profileFacts(p profile.Profile) [][2]string {
	model := p.Model
	if p.Provider != "" {
		model += "@" + p.Provider
	}
	tools := "all the policy allows"
	switch {
	case p.Tools == nil:
	case len(p.Tools) == 0:
		tools = "none"
	default:
		tools = strings.Join(p.Tools, ", ")
	}
	vision := "no"
	if p.Vision {
		vision = "yes"
	}
	sub := "off"
	if p.Subagents.MaxDepth > 0 {
		sub = fmt.Sprintf("depth %d, %d at once", p.Subagents.MaxDepth, p.Subagents.MaxConcurrent)
	}
	models := "any" // what /model may choose
	if p.Models != nil {
		models = strings.Join(p.Models, ", ")
	}
	return [][2]string{
		{"model", model}, {"tools", tools}, {"vision", vision},
		{"history", fmt.Sprintf("%d turns", p.HistoryTurns)}, {"subagents", sub}, {"models", models},
	}
}

// writeProfiles lists every profile, one a line, as YAML comments: the printed configuration
// above them still loads as it is.
func writeProfiles(w io.Writer, set *profile.Set) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, name := range set.Names() {
		p, _ := set.Profile(name)
		fmt.Fprintf(tw, "%s", name)
		for _, f := range profileFacts(p) {
			fmt.Fprintf(tw, "\t%s: %s", f[0], f[1])
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush() // into a buffer: cannot fail
	fmt.Fprintln(w, "# Profiles (model@provider; no provider: the llm endpoint). Which one a conversation gets:")
	fmt.Fprintln(w, `#   bot check-config --route "<conversation key> [dm] [user=<id>]"`)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			fmt.Fprint(w, "#   "+strings.TrimRight(line, " \n")+"\n")
		}
	}
}

// writeRoute says which profile the run described by facts gets, and why.
func writeRoute(w io.Writer, set *profile.Set, facts profile.Facts) {
	r := set.Resolve(facts)
	fmt.Fprintf(w, "conversation: %s\n", facts.Key)
	if facts.Direct {
		fmt.Fprintln(w, "dm: yes")
	}
	if facts.User != "" {
		fmt.Fprintf(w, "user: %s\n", facts.User)
	}
	fmt.Fprintf(w, "profile: %s\n", r.Profile.Name)
	fmt.Fprintf(w, "why: %s\n", r.Why)
	for _, f := range profileFacts(r.Profile) {
		fmt.Fprintf(w, "%s: %s\n", f[0], f[1])
	}
}

// checkRoute prints which profile the conversation described by route gets, and why. Problems
// of the configuration that do not stop the answer are reported, and do not change the exit
// status.
func checkRoute(inv invocation, cfg *config.Config, route string) int {
	set, err := profileSet(cfg)
	if err != nil {
		fmt.Fprintln(inv.stderr, "bot:", err)
		return exitConfig
	}
	facts, err := profile.ParseFacts(route)
	if err != nil {
		fmt.Fprintln(inv.stderr, "bot check-config --route:", err)
		return exitConfig
	}
	writeRoute(inv.stdout, set, facts)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(inv.stderr, "bot: the configuration has problems too (`bot check-config` lists them):", err)
	}
	return exitOK
}

// places answers the router's /profile and bounds /model with the configured profiles.
type places struct{ set *profile.Set }

// placesOf is the router's view of set; nil when no profiles are configured.
func placesOf(set *profile.Set) router.Places {
	if set == nil {
		return nil
	}
	return places{set}
}

func (p places) resolve(k conv.Key, direct bool, user string) profile.Resolution {
	return p.set.Resolve(profile.Facts{Key: k, Direct: direct, User: user})
}

func (p places) Place(k conv.Key, direct bool, user string) string {
	res := p.resolve(k, direct, user)
	pr := res.Profile
	model := pr.Model
	if pr.Provider != "" {
		model += " @ " + pr.Provider
	}
	tools := "every tool the policy allows"
	if pr.Tools != nil {
		tools = "none"
		if len(pr.Tools) > 0 {
			tools = "`" + strings.Join(pr.Tools, "`, `") + "`"
		}
	}
	return fmt.Sprintf("This chat gets the profile `%s`: model `%s`, tools %s, images %s, %d turns of history, subagents to depth %d.\nWhy: %s",
		pr.Name, model, tools, map[bool]string{true: "seen", false: "not seen"}[pr.Vision], pr.HistoryTurns, pr.Subagents.MaxDepth, res.Why)
}

func (p places) Models(k conv.Key, direct bool, user string) []string {
	return p.resolve(k, direct, user).Profile.Models
}
