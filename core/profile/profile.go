// Package profile decides which agent profile a run gets from where it comes from: named
// profiles (a system prompt, a model and its endpoint, the tools, vision, history, subagent
// limits) and routes that pick one by platform, workspace, chat, DM and sender, first match
// wins. What no route claims gets the default profile, the top-level settings.
//
// It imports only the standard library and core/conv, so the router and the lead agent can
// share one resolver without reaching the configuration package.
package profile

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Default is the name of the profile made of the top-level settings. No configured profile may
// take it; a route may name it, to keep some place on the top-level settings.
const Default = "default"

// Subagents bounds the subagents a profile's lead agent may start.
type Subagents struct {
	// MaxDepth is how deep subagents may nest; 0 disables them.
	MaxDepth int
	// MaxConcurrent caps the subagents running at once under one lead.
	MaxConcurrent int
}

// Profile is one fully resolved agent profile: every field is what a run under it uses.
type Profile struct {
	Name         string   // Default for the top-level settings
	SystemPrompt string   // "" = the built-in prompt
	Model        string   // the model sent with every request
	Provider     string   // the endpoint's name; "" = the top-level endpoint
	Models       []string // what /model may choose; nil = any
	Tools        []string // globs over offered tool names; nil = every tool the policy allows; non-nil empty = none
	Vision       bool     // the model takes images
	HistoryTurns int      // past turns of a thread sent to the model
	Subagents    Subagents
}

// Partial is a configured profile: every nil or zero field takes the default profile's value.
type Partial struct {
	SystemPrompt, Model, Provider string
	// Models and Tools are unset when nil; a non-nil empty Tools means no tools at all.
	Models, Tools []string
	Vision        *bool
	HistoryTurns  int // 0 = unset
	Subagents     *Subagents
}

// Match is a route's selectors. Every selector that is set (non-empty, non-nil) must hold for
// the route to match; a Match with none set matches every run.
type Match struct {
	Platform   string // the conversation key's platform: telegram, slack, discord, console
	Team       string // a Slack team id (T…); implies platform slack
	Enterprise string // a Slack Enterprise Grid id (E…); implies platform slack
	Guild      string // a Discord guild id; implies platform discord
	Channel    string // the conversation key's chat
	User       string // the sender's channel_user_id
	DM         *bool  // whether the chat is a private chat with the bot
}

// Route sends the runs its Match selects to the profile named Profile (Default included).
type Route struct {
	Match   Match
	Profile string
}

// Resolution is the profile a run gets and why.
type Resolution struct {
	Profile Profile // fully merged: unset fields come from the default profile
	Route   int     // index of the route that matched; -1 when none did (the default profile)
	Why     string  // for an operator, e.g. `route 2 (platform slack, team T0123) → profile "support"`
}

// Set resolves runs to profiles. It is immutable after New and safe for concurrent use.
type Set struct {
	profiles map[string]Profile // merged, Default included
	routes   []Route
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// New merges every configured profile over def and keeps the routes in order. It refuses, with
// every problem at once, a profile named Default (in any case) or with a malformed name,
// negative limits, a tool glob that does not parse, and a route naming a profile that does not
// exist; errors name the profile (profiles.<name>) or the route (routes[<index>]). def's own
// Name is ignored: the default profile is always named Default.
func New(def Profile, profiles map[string]Partial, routes []Route) (*Set, error) {
	def.Name = Default
	s := &Set{profiles: map[string]Profile{Default: def}, routes: slices.Clone(routes)}
	var errs []error
	if err := checkLimits("the default profile", def.HistoryTurns, &def.Subagents); err != nil {
		errs = append(errs, err)
	}
	if err := checkGlobs("the default profile", def.Tools); err != nil {
		errs = append(errs, err)
	}
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		at := "profiles." + name
		p := profiles[name]
		switch {
		case strings.EqualFold(name, Default):
			errs = append(errs, fmt.Errorf("%s: %q is reserved for the top-level settings", at, Default))
			continue
		case !nameRE.MatchString(name):
			errs = append(errs, fmt.Errorf("%s: a profile name is 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", at))
			continue
		}
		if p.HistoryTurns < 0 {
			errs = append(errs, fmt.Errorf("%s: history turns must not be negative, got %d", at, p.HistoryTurns))
		}
		if err := checkLimits(at, 0, p.Subagents); err != nil {
			errs = append(errs, err)
		}
		if err := checkGlobs(at, p.Tools); err != nil {
			errs = append(errs, err)
		}
		s.profiles[name] = merge(name, def, p)
	}
	for i, r := range s.routes {
		if _, ok := s.profiles[r.Profile]; !ok {
			errs = append(errs, fmt.Errorf("routes[%d]: no profile %q (known: %s)", i, r.Profile, strings.Join(s.Names(), ", ")))
		}
		if r.Match.DM != nil {
			dm := *r.Match.DM // the caller's pointer must not change the route later
			s.routes[i].Match.DM = &dm
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("profile: %w", errors.Join(errs...))
	}
	return s, nil
}

func checkLimits(at string, historyTurns int, sub *Subagents) error {
	var errs []error
	if historyTurns < 0 {
		errs = append(errs, fmt.Errorf("%s: history turns must not be negative, got %d", at, historyTurns))
	}
	if sub != nil && (sub.MaxDepth < 0 || sub.MaxConcurrent < 0) {
		errs = append(errs, fmt.Errorf("%s: subagent limits must not be negative, got depth %d and %d at once", at, sub.MaxDepth, sub.MaxConcurrent))
	}
	return errors.Join(errs...)
}

func checkGlobs(at string, globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("%s: tools glob %q does not parse", at, g)
		}
	}
	return nil
}

// merge fills p's unset fields from def.
func merge(name string, def Profile, p Partial) Profile {
	out := def
	out.Name = name
	if p.SystemPrompt != "" {
		out.SystemPrompt = p.SystemPrompt
	}
	if p.Model != "" {
		out.Model = p.Model
	}
	if p.Provider != "" {
		out.Provider = p.Provider
	}
	if p.Models != nil {
		out.Models = p.Models
	}
	if p.Tools != nil {
		out.Tools = p.Tools
	}
	if p.Vision != nil {
		out.Vision = *p.Vision
	}
	if p.HistoryTurns != 0 {
		out.HistoryTurns = p.HistoryTurns
	}
	if p.Subagents != nil {
		out.Subagents = *p.Subagents
	}
	// A Profile handed out never shares its lists with the caller's configuration.
	out.Models = cloneKeepNil(out.Models)
	out.Tools = cloneKeepNil(out.Tools)
	return out
}

// cloneKeepNil copies a list, keeping nil nil and empty empty: the two mean different things.
func cloneKeepNil(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

// Names lists the profiles, Default first, then the others sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.profiles))
	for name := range s.profiles {
		if name != Default {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return append([]string{Default}, out...)
}

// Profile returns the merged profile called name; ok is false when there is none.
func (s *Set) Profile(name string) (Profile, bool) {
	p, ok := s.profiles[name]
	if !ok {
		return Profile{}, false
	}
	return p.clone(), true
}

func (p Profile) clone() Profile {
	p.Models = cloneKeepNil(p.Models)
	p.Tools = cloneKeepNil(p.Tools)
	return p
}

// AllowsTool reports whether a run under p may be offered the tool called name (an offered name,
// server__tool): always when Tools is nil, else when one of its globs matches (path.Match, as
// tools.policy matches).
func (p Profile) AllowsTool(name string) bool {
	if p.Tools == nil {
		return true
	}
	for _, g := range p.Tools {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// AllowsModel reports whether /model may switch a conversation under p to model: always when
// Models is nil, else when Models lists it.
func (p Profile) AllowsModel(model string) bool {
	return p.Models == nil || slices.Contains(p.Models, model)
}
