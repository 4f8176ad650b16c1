package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/v2"
)

// LLMProvider is one named OpenAI-compatible endpoint besides the top-level one
// (llm.providers.<name>), for profiles and transcription to name.
type LLMProvider struct {
	// BaseURL is the endpoint, like http://localhost:11434/v1; required.
	BaseURL string `koanf:"base_url"`
	// APIKey is the bearer key, a secret: never printed nor quoted. The file may give it as
	// api_key_file instead, a path (relative to the file's folder) that Load reads into APIKey.
	// Empty sends no key, as local servers expect.
	APIKey string `koanf:"api_key"`
	// Model is what a profile naming this provider but no model uses.
	Model string `koanf:"model"`
	// Timeout bounds one call; Load sets it to llm.timeout when the file does not.
	Timeout time.Duration `koanf:"timeout"`
	// MaxRetries is how many times a call answered 429 or 5xx is retried; Load sets it to
	// llm.max_retries when the file does not.
	MaxRetries int `koanf:"max_retries"`
}

// Transcription configures turning voice notes into text through POST
// <base_url>/audio/transcriptions of an endpoint.
type Transcription struct {
	// Provider names the endpoint: "" the top-level llm endpoint, else one of llm.providers.
	Provider string `koanf:"provider"`
	// Model is the transcription model, like whisper-1; empty turns transcription off.
	Model string `koanf:"model"`
}

// Profile is one configured agent profile (profiles.<name>). Each field left unset (empty, nil
// or 0) takes the top-level setting, as the default profile has it.
type Profile struct {
	// SystemPrompt replaces the lead agent's system prompt; unset: llm.system_prompt.
	SystemPrompt string `koanf:"system_prompt"`
	// Model is the model; unset: the provider's model when Provider is set, else llm.model.
	Model string `koanf:"model"`
	// Provider names the endpoint, one of llm.providers; "" is the top-level llm endpoint.
	Provider string `koanf:"provider"`
	// Models are what /model may choose in this profile; nil: any.
	Models []string `koanf:"models"`
	// Tools are globs over offered tool names (server__tool), as tools.policy's; nil: every tool
	// the policy allows; empty (not nil): none.
	Tools []string `koanf:"tools"`
	// Vision says whether Model takes images; nil: llm.vision.
	Vision *bool `koanf:"vision"`
	// HistoryTurns is how many past turns are sent to the model; 0: runs.history_turns.
	HistoryTurns int `koanf:"history_turns"`
	// Subagents bounds the profile's subagents; nil, or a nil field: subagents.*.
	Subagents *ProfileSubagents `koanf:"subagents"`
}

// ProfileSubagents is a profile's subagent limits; a nil field takes subagents.*.
type ProfileSubagents struct {
	// MaxDepth is how deep subagents may nest; 0 disables them.
	MaxDepth *int `koanf:"max_depth"`
	// MaxConcurrent caps the subagents running at once under one lead.
	MaxConcurrent *int `koanf:"max_concurrent"`
}

// Route picks Profile for the runs its Match selects (routes[i]); the first route that matches
// a run decides.
type Route struct {
	Match RouteMatch `koanf:"match"`
	// Profile is a name in profiles, or DefaultProfile.
	Profile string `koanf:"profile"`
}

// RouteMatch is a route's selectors: every one set must hold; none set matches every run.
type RouteMatch struct {
	// Platform is one of Platforms.
	Platform string `koanf:"platform"`
	// Team is a Slack workspace (team) id, T…; implies platform slack.
	Team string `koanf:"team"`
	// Enterprise is a Slack Enterprise Grid id, E…; implies platform slack.
	Enterprise string `koanf:"enterprise"`
	// Guild is a Discord guild id; implies platform discord.
	Guild string `koanf:"guild"`
	// Channel is the chat: a Slack or Discord channel id, a Telegram chat id, the console chat.
	Channel string `koanf:"channel"`
	// DM, when set, requires a direct (private) chat with the bot, or requires anything else.
	DM *bool `koanf:"dm"`
	// User is the sender's channel_user_id.
	User string `koanf:"user"`
}

// DefaultProfile names the profile made of the top-level settings; no configured profile may
// take it, and a route may name it.
const DefaultProfile = "default"

// Endpoint returns the settings of the endpoint called name: "" is the top-level one (llm.base_url,
// llm.api_key, llm.model, llm.timeout, llm.max_retries), anything else llm.providers[name]; ok is
// false for a name llm.providers lacks.
func (l LLM) Endpoint(name string) (p LLMProvider, ok bool) {
	if name == "" {
		return LLMProvider{BaseURL: l.BaseURL, APIKey: l.APIKey, Model: l.Model, Timeout: l.Timeout, MaxRetries: l.MaxRetries}, true
	}
	p, ok = l.Providers[name]
	return p, ok
}

var profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// providerKeyFile is the key of a provider's api_key read from a file.
const providerKeyFile = "api_key" + fileSuffix

// routeStringSelectors are the selectors whose values are ids: a YAML number is taken as its
// decimal digits, but a float has lost them.
var routeStringSelectors = []string{"platform", "team", "enterprise", "guild", "channel", "user"}

// checkProfilesTree checks llm.providers, profiles and routes of one layer's tree before they
// are decoded, naming each unknown or mistyped key and never quoting a value (a provider's
// api_key is a secret).
func checkProfilesTree(key string, v any) []Problem {
	if v == nil {
		return nil
	}
	switch key {
	case "llm.providers":
		providers, ok := v.(map[string]any)
		if !ok {
			return []Problem{{Key: key, Message: "expected a mapping of provider names to providers, got " + kindOf(v)}}
		}
		fields := append(fieldsOf(reflect.TypeFor[LLMProvider]()), field{providerKeyFile, reflect.TypeFor[string]()})
		var out []Problem
		for _, name := range sortedKeys(providers) {
			out = append(out, checkMapping(key+"."+name, providers[name], fields)...)
		}
		return out
	case "profiles":
		profiles, ok := v.(map[string]any)
		if !ok {
			return []Problem{{Key: key, Message: "expected a mapping of profile names to profiles, got " + kindOf(v)}}
		}
		var out []Problem
		for _, name := range sortedKeys(profiles) {
			out = append(out, checkFields(key+"."+name, profiles[name], reflect.TypeFor[Profile]())...)
		}
		return out
	case "routes":
		routes, ok := v.([]any)
		if !ok {
			return []Problem{{Key: key, Message: "expected a list of routes, got " + kindOf(v)}}
		}
		var out []Problem
		for i, r := range routes {
			at := fmt.Sprintf("%s[%d]", key, i)
			out = append(out, checkFields(at, r, reflect.TypeFor[Route]())...)
			out = append(out, checkSelectorValues(at+".match", r)...)
		}
		return out
	}
	return nil
}

// checkSelectorValues refuses a selector written as a float or a boolean: a Discord id past 2^53
// has lost digits by the time it is a float, and `channel: yes` is not what was meant.
func checkSelectorValues(at string, route any) []Problem {
	r, _ := route.(map[string]any)
	m, _ := r["match"].(map[string]any)
	var out []Problem
	for _, k := range routeStringSelectors {
		switch m[k].(type) {
		case float32, float64:
			out = append(out, Problem{Key: at + "." + k, Message: "is a number YAML reads as a float, which loses " +
				"an id's digits: write the id in quotes"})
		case bool:
			out = append(out, Problem{Key: at + "." + k, Message: "expected a string, got a boolean: write the value in quotes"})
		}
	}
	return out
}

// resolveProviderKeys reads every llm.providers.<name>.api_key_file of one layer into its
// api_key, a relative path being relative to baseDir, as resolveFiles does for the top-level
// secrets.
func resolveProviderKeys(ko *koanf.Koanf, baseDir string, source func(key string) string) []Problem {
	providers, _ := ko.Get("llm.providers").(map[string]any)
	var problems []Problem
	for _, name := range sortedKeys(providers) {
		entry, _ := providers[name].(map[string]any)
		raw, set := entry[providerKeyFile]
		if !set {
			continue
		}
		at := "llm.providers." + name
		fk := at + "." + providerKeyFile
		ko.Delete(fk)
		if raw == nil {
			continue
		}
		p, ok := raw.(string)
		if !ok || p == "" {
			problems = append(problems, Problem{Key: fk, Source: source(fk), Message: "expected a file path"})
			continue
		}
		if entry["api_key"] != nil {
			problems = append(problems, Problem{Key: fk, Source: source(fk),
				Message: "set either " + at + ".api_key or " + fk + ", not both"})
			continue
		}
		if !filepath.IsAbs(p) && baseDir != "" {
			p = filepath.Join(baseDir, p)
		}
		content, reason := readSecretFile(p)
		if reason != "" {
			problems = append(problems, Problem{Key: fk, Source: source(fk), Message: fmt.Sprintf("cannot use %s: %s", p, reason)})
			continue
		}
		if err := ko.Set(at+".api_key", content); err != nil {
			problems = append(problems, Problem{Key: fk, Source: source(fk), Message: "cannot set the value: " + err.Error()})
		}
	}
	return problems
}

// fillProviderDefaults gives every provider the top-level timeout and max_retries that the
// merged layers (ko) do not set for it.
func (l *LLM) fillProviderDefaults(ko *koanf.Koanf) {
	for name, p := range l.Providers {
		at := "llm.providers." + name
		if ko.Get(at+".timeout") == nil {
			p.Timeout = l.Timeout
		}
		if ko.Get(at+".max_retries") == nil {
			p.MaxRetries = l.MaxRetries
		}
		l.Providers[name] = p
	}
}

// validateProfiles checks llm.providers, llm.transcription, profiles and routes for Validate.
func (c *Config) validateProfiles(v *validator) {
	c.LLM.validateProviders(v)
	for _, name := range sortedKeys(c.Profiles) {
		c.Profiles[name].validate(v, name, c)
	}
	for i, r := range c.Routes {
		r.validate(v, fmt.Sprintf("routes[%d]", i), c)
	}
}

// validateProviders checks llm.providers and llm.transcription.
func (l LLM) validateProviders(v *validator) {
	for _, name := range sortedKeys(l.Providers) {
		p, at := l.Providers[name], "llm.providers."+name
		if !toolServerNameRE.MatchString(name) {
			v.add(at, "a provider name is 1 to 32 letters, digits or '-', starting with a letter or digit")
		}
		v.httpURL(at+".base_url", p.BaseURL)
		if p.APIKey != strings.TrimSpace(p.APIKey) {
			v.add(at+".api_key", "has spaces or line breaks around it: remove them")
		}
		v.positiveDuration(at+".timeout", p.Timeout)
		v.atLeast(at+".max_retries", p.MaxRetries, 0)
	}
	v.provider("llm.transcription.provider", l.Transcription.Provider, l.Providers)
}

// validate checks profiles.<name> of c.
func (p Profile) validate(v *validator, name string, c *Config) {
	at := "profiles." + name
	switch {
	case strings.EqualFold(name, DefaultProfile):
		v.add(at, `"default" is reserved for the top-level settings (llm.*, runs.history_turns, subagents.*): choose another name`)
	case !profileNameRE.MatchString(name):
		v.add(at, "a profile name is 1 to 64 letters, digits, '_' or '-', starting with a letter or digit")
	}
	known := v.provider(at+".provider", p.Provider, c.LLM.Providers)
	v.nonEmptyItems(at+".models", p.Models)
	v.globs(at+".tools", p.Tools)
	if p.HistoryTurns < 0 {
		v.add(at+".history_turns", fmt.Sprintf("must not be negative (0 or unset: runs.history_turns), got %d", p.HistoryTurns))
	}
	if s := p.Subagents; s != nil {
		s.validate(v, at+".subagents", c.Subagents.MaxDepth)
	}
	if known {
		p.validateModel(v, at, c.LLM)
	}
}

// validate checks a profile's subagents.* at at; depth is subagents.max_depth, which an unset
// max_depth takes.
func (s ProfileSubagents) validate(v *validator, at string, depth int) {
	if s.MaxDepth != nil {
		depth = *s.MaxDepth
		if depth < 0 {
			v.add(at+".max_depth", fmt.Sprintf("must not be negative (0: no subagents), got %d", depth))
		}
	}
	if n := s.MaxConcurrent; n != nil && *n < 0 {
		v.add(at+".max_concurrent", fmt.Sprintf("must not be negative, got %d", *n))
	} else if n != nil && *n == 0 && depth > 0 {
		v.add(at+".max_concurrent", "must be at least 1 while subagents are on (max_depth above 0)")
	}
}

// validateModel checks that the profile at at has a model, and that its models include it. Its
// provider must be known.
func (p Profile) validateModel(v *validator, at string, l LLM) {
	model := p.Model
	if model == "" && p.Provider != "" {
		model = l.Providers[p.Provider].Model
		if model == "" {
			v.add(at+".model", fmt.Sprintf("required: llm.providers.%s sets no model, and llm.model is the top-level endpoint's", p.Provider))
			return
		}
	}
	if model == "" {
		model = l.Model
	}
	if p.Models != nil && !slices.Contains(p.Models, model) {
		v.add(at+".models", fmt.Sprintf("must include the profile's own model %q", model))
	}
}

// validate checks the route at at (routes[i]) of c.
func (r Route) validate(v *validator, at string, c *Config) {
	_, known := c.Profiles[r.Profile]
	switch {
	case r.Profile == "":
		v.add(at+".profile", "required: the profile this route picks, a name in profiles or default")
	case !known && r.Profile != DefaultProfile:
		v.add(at+".profile", fmt.Sprintf("no profile %q: known are %s", r.Profile, strings.Join(c.profileNames(), ", ")))
	}
	r.Match.validate(v, at+".match")
}

// validate checks a route's selectors at mat (routes[i].match): that they can match together.
func (m RouteMatch) validate(v *validator, mat string) {
	if m.Platform != "" {
		v.oneOf(mat+".platform", m.Platform, Platforms()...)
	}
	for _, s := range []struct{ key, val string }{{"team", m.Team}, {"enterprise", m.Enterprise}} {
		if s.val != "" && m.Platform != "" && m.Platform != PlatformSlack {
			v.add(mat+"."+s.key, fmt.Sprintf("a Slack %s id matches only platform slack, not %q", s.key, m.Platform))
		}
	}
	if m.Guild == "" {
		return
	}
	switch {
	case m.Platform != "" && m.Platform != PlatformDiscord:
		v.add(mat+".guild", fmt.Sprintf("a Discord guild id matches only platform discord, not %q", m.Platform))
	case m.Team != "" || m.Enterprise != "":
		v.add(mat+".guild", "a route matches Slack (team, enterprise) or Discord (guild), not both: it would match nothing")
	}
	if _, err := strconv.ParseUint(m.Guild, 10, 64); err != nil {
		v.add(mat+".guild", "must be a numeric guild id (right-click the server → Copy Server ID)")
	}
}

// provider checks that name is "" (the top-level endpoint) or a provider in llm.providers, and
// reports whether it is.
func (v *validator) provider(key, name string, providers map[string]LLMProvider) bool {
	if _, ok := providers[name]; ok || name == "" {
		return true
	}
	known := "none are configured"
	if len(providers) > 0 {
		known = "known are " + strings.Join(sortedKeys(providers), ", ")
	}
	v.add(key, fmt.Sprintf("no provider %q in llm.providers (\"\" is the top-level llm endpoint); %s", name, known))
	return false
}

// profileNames lists the profiles a route may name: default, then the configured ones sorted.
func (c *Config) profileNames() []string {
	return append([]string{DefaultProfile}, sortedKeys(c.Profiles)...)
}

// redactedProviders is llm.providers as Redacted prints it: api keys hidden, URLs without
// credentials.
func redactedProviders(providers map[string]LLMProvider) map[string]any {
	out := map[string]any{}
	for name, p := range providers {
		entry := map[string]any{"base_url": maskToolURL(p.BaseURL), "timeout": p.Timeout.String(), "max_retries": p.MaxRetries}
		if p.APIKey != "" {
			entry["api_key"] = RedactedValue
		}
		if p.Model != "" {
			entry["model"] = p.Model
		}
		out[name] = entry
	}
	return out
}

// profilesNode is profiles as YAML values, in the file's spelling, unset fields left out.
func profilesNode(profiles map[string]Profile) map[string]any {
	out := map[string]any{}
	for name, p := range profiles {
		m := map[string]any{}
		for _, s := range [][2]string{{"system_prompt", p.SystemPrompt}, {"model", p.Model}, {"provider", p.Provider}} {
			if s[1] != "" {
				m[s[0]] = s[1]
			}
		}
		if p.Models != nil {
			m["models"] = p.Models
		}
		if p.Tools != nil {
			m["tools"] = p.Tools // an empty list means no tools: it must print as []
		}
		if p.Vision != nil {
			m["vision"] = *p.Vision
		}
		if p.HistoryTurns != 0 {
			m["history_turns"] = p.HistoryTurns
		}
		if s := p.Subagents; s != nil {
			sub := map[string]int{}
			if s.MaxDepth != nil {
				sub["max_depth"] = *s.MaxDepth
			}
			if s.MaxConcurrent != nil {
				sub["max_concurrent"] = *s.MaxConcurrent
			}
			m["subagents"] = sub
		}
		out[name] = m
	}
	return out
}

// routesNode is routes as YAML values, in the file's spelling.
func routesNode(routes []Route) []map[string]any {
	out := []map[string]any{}
	for _, r := range routes {
		m := map[string]any{}
		for _, s := range [][2]string{{"platform", r.Match.Platform}, {"team", r.Match.Team}, {"enterprise", r.Match.Enterprise},
			{"guild", r.Match.Guild}, {"channel", r.Match.Channel}, {"user", r.Match.User}} {
			if s[1] != "" {
				m[s[0]] = s[1]
			}
		}
		if r.Match.DM != nil {
			m["dm"] = *r.Match.DM
		}
		out = append(out, map[string]any{"match": m, "profile": r.Profile})
	}
	return out
}
