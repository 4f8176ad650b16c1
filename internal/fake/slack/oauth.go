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

// oauth are the workspaces and their bot tokens: the install flow's codes exchanged by
// oauth.v2.access, token rotation with refresh tokens, and the workspaces tests add or revoke.
type oauth struct {
	st *store
	// Guarded by st.mu. teams maps each valid bot token to its workspace; codes are OAuth codes
	// not yet exchanged (code → team); refresh maps refresh tokens to their workspace.
	teams     map[string]string
	codes     map[string]string
	refresh   map[string]string
	rotateIn  int // > 0: tokens issued by OAuth expire after this many seconds
	tokenSeq  int
	lastToken map[string]string // team → its latest bot token
}

func newOAuth(st *store, botToken string) *oauth {
	return &oauth{st: st, teams: map[string]string{botToken: TeamID}, codes: map[string]string{},
		refresh: map[string]string{}, lastToken: map[string]string{TeamID: botToken}}
}

// teamLocked is the workspace whose bot token token is, if it is a valid one.
func (o *oauth) teamLocked(token string) (team string, ok bool) {
	team, ok = o.teams[token]
	return team, ok
}

// AddTeam registers another workspace with a bot token of its own and returns the token.
// Calls made with it are recorded with Call.Team = team.
func (o *oauth) AddTeam(team string) string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	return o.addTeamLocked(team)
}

func (o *oauth) addTeamLocked(team string) string {
	o.tokenSeq++
	tok := fmt.Sprintf("xoxb-%s-%04d-fakeTEAMtokenDoNotLog", team, o.tokenSeq)
	o.teams[tok] = team
	o.lastToken[team] = tok
	return tok
}

// RevokeTeam makes every bot token of team invalid (as an uninstall does).
func (o *oauth) RevokeTeam(team string) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	for tok, t := range o.teams {
		if t == team {
			delete(o.teams, tok)
		}
	}
}

// TeamToken returns the latest bot token issued for team ("" if none).
func (o *oauth) TeamToken(team string) string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	return o.lastToken[team]
}

// SetTokenRotation makes the tokens oauth.v2.access issues expire after d (with a refresh
// token; a refresh invalidates the token it replaces). Zero turns rotation off.
func (o *oauth) SetTokenRotation(d time.Duration) {
	o.st.mu.Lock()
	o.rotateIn = int(d / time.Second)
	o.st.mu.Unlock()
}

// IssueCode returns an OAuth code that oauth.v2.access exchanges, once, for a bot token of team
// — what Slack's authorize page hands the redirect URL after the user approves.
func (o *oauth) IssueCode(team string) string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	code := fmt.Sprintf("code-%s-%d", team, o.st.nextLocked())
	o.codes[code] = team
	return code
}

// IssueOrgCode returns an OAuth code for an org-wide install on Enterprise Grid: its token
// serves every workspace of enterprise, and oauth.v2.access answers with no team.
func (o *oauth) IssueOrgCode(enterprise string) string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	code := fmt.Sprintf("code-org-%s-%d", enterprise, o.st.nextLocked())
	o.codes[code] = "org:" + enterprise
	return code
}

// IssueGridCode returns an OAuth code for a workspace-level install of team, a workspace of
// the Enterprise Grid organization enterprise: oauth.v2.access answers with both.
func (o *oauth) IssueGridCode(enterprise, team string) string {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	code := fmt.Sprintf("code-grid-%s-%s-%d", enterprise, team, o.st.nextLocked())
	o.codes[code] = "grid:" + enterprise + "/" + team
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

// access is oauth.v2.access: a code (or, grant_type=refresh_token, a refresh token) for a bot
// token. Runs with st.mu held.
func (o *oauth) access(p map[string]string) (map[string]any, *apiErr) {
	if p["client_id"] != ClientID || p["client_secret"] != ClientSecret {
		return nil, slackErr("invalid_client_id")
	}
	var team string
	switch {
	case p["grant_type"] == "refresh_token":
		t, ok := o.refresh[p["refresh_token"]]
		if !ok {
			return nil, slackErr("invalid_refresh_token")
		}
		delete(o.refresh, p["refresh_token"])
		delete(o.teams, o.lastToken[t]) // the token it replaces stops working
		team = t
	default:
		t, ok := o.codes[p["code"]]
		if !ok {
			return nil, slackErr("invalid_code")
		}
		delete(o.codes, p["code"])
		if _, err := url.Parse(p["redirect_uri"]); err != nil || p["redirect_uri"] == "" {
			return nil, slackErr("bad_redirect_uri")
		}
		team = t
	}
	ent := ""
	if grid, ok := strings.CutPrefix(team, "grid:"); ok {
		ent, team, _ = strings.Cut(grid, "/")
	}
	tok := o.addTeamLocked(team)
	res := map[string]any{"access_token": tok, "token_type": "bot", "scope": "chat:write,commands",
		"bot_user_id": BotUserID, "app_id": AppID, "team": map[string]any{"id": team, "name": team},
		"enterprise": nil, "is_enterprise_install": false}
	if ent != "" {
		res["enterprise"] = map[string]any{"id": ent, "name": ent}
	}
	if ent, ok := strings.CutPrefix(team, "org:"); ok {
		res["team"], res["enterprise"], res["is_enterprise_install"] = nil, map[string]any{"id": ent, "name": ent}, true
	}
	if o.rotateIn > 0 {
		rt := fmt.Sprintf("xoxe-1-refresh-%s-%d", team, o.st.nextLocked())
		o.refresh[rt] = team
		res["refresh_token"], res["expires_in"] = rt, o.rotateIn
	}
	return res, nil
}
