package profile

import (
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// Facts are what a verified run says about where it comes from.
type Facts struct {
	// Key is the conversation. Its Workspace is, on Slack, the team id ("T…") or on Enterprise
	// Grid the enterprise and team ids joined by a slash ("E…/T…"; an org-wide "E…" alone is
	// the enterprise); on Discord the guild id; empty elsewhere.
	Key    conv.Key
	Direct bool   // a private chat with the bot
	User   string // the sender's channel_user_id
}

// Platform names the selectors know; team and enterprise imply slack, guild discord.
const (
	platformSlack   = "slack"
	platformDiscord = "discord"
)

// Resolve returns the profile of the first route whose Match holds for f, or the default
// profile when none does. It never fails.
func (s *Set) Resolve(f Facts) Resolution {
	for i, r := range s.routes {
		if !r.Match.holds(f) {
			continue
		}
		p := s.profiles[r.Profile] // New checked that it exists
		return Resolution{
			Profile: p.clone(),
			Route:   i,
			Why:     fmt.Sprintf("route %d (%s) → %s", i, r.Match.describe(), profileText(r.Profile)),
		}
	}
	return Resolution{
		Profile: s.profiles[Default].clone(),
		Route:   -1,
		Why:     "no route matches → the default profile (the top-level settings)",
	}
}

func profileText(name string) string {
	if name == Default {
		return "the default profile (the top-level settings)"
	}
	return fmt.Sprintf("profile %q", name)
}

// holds reports whether every selector set in m holds for f.
func (m Match) holds(f Facts) bool {
	k := f.Key
	if m.Platform != "" && k.Platform != m.Platform {
		return false
	}
	if m.Team != "" || m.Enterprise != "" {
		if k.Platform != platformSlack {
			return false
		}
		enterprise, team := slackWorkspace(k.Workspace)
		if m.Team != "" && team != m.Team {
			return false
		}
		if m.Enterprise != "" && enterprise != m.Enterprise {
			return false
		}
	}
	if m.Guild != "" && (k.Platform != platformDiscord || k.Workspace != m.Guild) {
		return false
	}
	if m.Channel != "" && k.Chat != m.Channel {
		return false
	}
	if m.DM != nil && f.Direct != *m.DM {
		return false
	}
	if m.User != "" && f.User != m.User {
		return false
	}
	return true
}

// slackWorkspace splits a Slack conversation key's workspace into its enterprise and team:
// "E1/T2" is enterprise E1, team T2; "T2" is team T2 alone; "E1" (an org-wide install, no team)
// is enterprise E1 alone.
func slackWorkspace(ws string) (enterprise, team string) {
	if e, t, ok := strings.Cut(ws, "/"); ok {
		return e, t
	}
	if strings.HasPrefix(ws, "E") {
		return ws, ""
	}
	return "", ws
}

// describe lists m's selectors for an operator: "platform slack, team T0123".
func (m Match) describe() string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("platform", m.Platform)
	add("enterprise", m.Enterprise)
	add("team", m.Team)
	add("guild", m.Guild)
	add("channel", m.Channel)
	if m.DM != nil {
		parts = append(parts, fmt.Sprintf("dm %t", *m.DM))
	}
	add("user", m.User)
	if len(parts) == 0 {
		return "matches everything"
	}
	return strings.Join(parts, ", ")
}
