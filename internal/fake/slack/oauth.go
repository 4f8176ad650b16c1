package slackfake

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The OAuth client credentials the fake's oauth.v2.access accepts.
const (
	ClientID     = "1111.2222"
	ClientSecret = "fake-client-secret-do-not-log"
)

// AddTeam registers another workspace with a bot token of its own and returns the token.
// Calls made with it are recorded with Call.Team = team.
func (s *Server) AddTeam(team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addTeamLocked(team)
}

func (s *Server) addTeamLocked(team string) string {
	s.tokenSeq++
	tok := fmt.Sprintf("xoxb-%s-%04d-fakeTEAMtokenDoNotLog", team, s.tokenSeq)
	s.teams[tok] = team
	s.lastToken[team] = tok
	return tok
}

// RevokeTeam makes every bot token of team invalid (as an uninstall does).
func (s *Server) RevokeTeam(team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, t := range s.teams {
		if t == team {
			delete(s.teams, tok)
		}
	}
}

// TeamToken returns the latest bot token issued for team ("" if none).
func (s *Server) TeamToken(team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastToken[team]
}

// SetTokenRotation makes the tokens oauth.v2.access issues expire after d (with a refresh
// token; a refresh invalidates the token it replaces). Zero turns rotation off.
func (s *Server) SetTokenRotation(d time.Duration) {
	s.mu.Lock()
	s.rotateIn = int(d / time.Second)
	s.mu.Unlock()
}

// IssueCode returns an OAuth code that oauth.v2.access exchanges, once, for a bot token of team
// — what Slack's authorize page hands the redirect URL after the user approves.
func (s *Server) IssueCode(team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	code := fmt.Sprintf("code-%s-%d", team, s.seq)
	s.codes[code] = team
	return code
}

// IssueOrgCode returns an OAuth code for an org-wide install on Enterprise Grid: its token
// serves every workspace of enterprise, and oauth.v2.access answers with no team.
func (s *Server) IssueOrgCode(enterprise string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	code := fmt.Sprintf("code-org-%s-%d", enterprise, s.seq)
	s.codes[code] = "org:" + enterprise
	return code
}

// IssueGridCode returns an OAuth code for a workspace-level install of team, a workspace of
// the Enterprise Grid organization enterprise: oauth.v2.access answers with both.
func (s *Server) IssueGridCode(enterprise, team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	code := fmt.Sprintf("code-grid-%s-%s-%d", enterprise, team, s.seq)
	s.codes[code] = "grid:" + enterprise + "/" + team
	return code
}

// AuthorizeURL is where Slack's authorize page would be; the install handler under test
// redirects to any URL given to it, and tests read the state from the redirect.
func AuthorizeURL() string { return "https://slack.com/oauth/v2/authorize" }

func redactOAuth(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		if k == "client_secret" || k == "code" || k == "refresh_token" {
			v = "[redacted]"
		}
		out[k] = v
	}
	return out
}

// oauthAccess is oauth.v2.access: a code (or, grant_type=refresh_token, a refresh token) for
// a bot token. Runs with s.mu held.
func (s *Server) oauthAccess(p map[string]string) (map[string]any, *apiErr) {
	if p["client_id"] != ClientID || p["client_secret"] != ClientSecret {
		return nil, slackErr("invalid_client_id")
	}
	var team string
	switch {
	case p["grant_type"] == "refresh_token":
		t, ok := s.refresh[p["refresh_token"]]
		if !ok {
			return nil, slackErr("invalid_refresh_token")
		}
		delete(s.refresh, p["refresh_token"])
		delete(s.teams, s.lastToken[t]) // the token it replaces stops working
		team = t
	default:
		t, ok := s.codes[p["code"]]
		if !ok {
			return nil, slackErr("invalid_code")
		}
		delete(s.codes, p["code"])
		if _, err := url.Parse(p["redirect_uri"]); err != nil || p["redirect_uri"] == "" {
			return nil, slackErr("bad_redirect_uri")
		}
		team = t
	}
	ent := ""
	if grid, ok := strings.CutPrefix(team, "grid:"); ok {
		ent, team, _ = strings.Cut(grid, "/")
	}
	tok := s.addTeamLocked(team)
	res := map[string]any{"access_token": tok, "token_type": "bot", "scope": "chat:write,commands",
		"bot_user_id": BotUserID, "app_id": AppID, "team": map[string]any{"id": team, "name": team},
		"enterprise": nil, "is_enterprise_install": false}
	if ent != "" {
		res["enterprise"] = map[string]any{"id": ent, "name": ent}
	}
	if ent, ok := strings.CutPrefix(team, "org:"); ok {
		res["team"], res["enterprise"], res["is_enterprise_install"] = nil, map[string]any{"id": ent, "name": ent}, true
	}
	if s.rotateIn > 0 {
		s.seq++
		rt := fmt.Sprintf("xoxe-1-refresh-%s-%d", team, s.seq)
		s.refresh[rt] = team
		res["refresh_token"], res["expires_in"] = rt, s.rotateIn
	}
	return res, nil
}
