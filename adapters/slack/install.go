package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
)

// Installation is one workspace's install of the app (OAuth v2): its bot token and, with token
// rotation on, the refresh token and when the bot token expires. An org-wide install on
// Enterprise Grid has the enterprise id as its Team: it serves every workspace of the org.
type Installation struct {
	Team, Enterprise string
	BotUserID        string
	BotToken         string
	RefreshToken     string
	// ExpiresAt is when BotToken stops working; zero when it does not expire.
	ExpiresAt time.Time
}

// String is redacted: it never shows a token.
func (i Installation) String() string {
	return fmt.Sprintf("slack.Installation{Team:%q Enterprise:%q BotUserID:%q BotToken:%s}", i.Team, i.Enterprise, i.BotUserID, redacted)
}

// GoString is redacted like String.
func (i Installation) GoString() string { return i.String() }

// Installations keeps the workspaces that installed the app, for an app installed in many
// (OAuth v2). The wiring backs it with Redis, the tokens encrypted; adapters know nothing of
// Redis. Every method is safe for concurrent use.
//
// An install with no BotToken is an uninstall's mark: the workspace (or organization) of the
// configured bot token uninstalled the app, so no process sharing the store uses that token for
// it any more. Installing again replaces the mark; a process starting with a bot token that
// auth.test accepts deletes the mark of the token's workspace.
type Installations interface {
	// Installation returns the team's install; found is false when it has none.
	Installation(ctx context.Context, team string) (inst Installation, found bool, err error)
	// SaveInstallation stores inst, replacing the team's previous one.
	SaveInstallation(ctx context.Context, inst Installation) error
	// DeleteInstallation forgets the team's install (uninstall, revoked tokens).
	DeleteInstallation(ctx context.Context, team string) error
	// DeleteEnterprise forgets an Enterprise Grid organization's installs after its org-wide
	// install was removed: the install saved under the enterprise id and every workspace
	// install whose Enterprise it is.
	DeleteEnterprise(ctx context.Context, enterprise string) error
	// ClaimState marks an OAuth state nonce used; claimed is false when it was used before, so
	// each state installs once.
	ClaimState(ctx context.Context, nonce string, ttl time.Duration) (claimed bool, err error)
}

// MemoryInstallations is Installations in memory, for tests and single processes. The zero
// value is ready to use.
type MemoryInstallations struct {
	mu     sync.Mutex
	insts  map[string]Installation
	states map[string]time.Time
}

// Installation returns the team's install.
func (m *MemoryInstallations) Installation(_ context.Context, team string) (Installation, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst, ok := m.insts[team]
	return inst, ok, nil
}

// SaveInstallation stores inst.
func (m *MemoryInstallations) SaveInstallation(_ context.Context, inst Installation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.insts == nil {
		m.insts = map[string]Installation{}
	}
	m.insts[inst.Team] = inst
	return nil
}

// DeleteInstallation forgets the team's install.
func (m *MemoryInstallations) DeleteInstallation(_ context.Context, team string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.insts, team)
	return nil
}

// DeleteEnterprise forgets the enterprise's org-wide install and its workspaces' installs.
func (m *MemoryInstallations) DeleteEnterprise(_ context.Context, enterprise string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for team, inst := range m.insts {
		if team == enterprise || inst.Enterprise == enterprise {
			delete(m.insts, team)
		}
	}
	return nil
}

// ClaimState marks nonce used until ttl passes.
func (m *MemoryInstallations) ClaimState(_ context.Context, nonce string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.states == nil {
		m.states = map[string]time.Time{}
	}
	for k, exp := range m.states {
		if now.After(exp) {
			delete(m.states, k)
		}
	}
	if _, used := m.states[nonce]; used {
		return false, nil
	}
	m.states[nonce] = now.Add(ttl)
	return true, nil
}

// teamOf is the team part of a conversation key's workspace ("E1/T1" → "T1").
func teamOf(workspace string) string {
	if _, team, ok := strings.Cut(workspace, "/"); ok {
		return team
	}
	return workspace
}

// enterpriseOf is the organization part of a conversation key's workspace ("E1/T1" → "E1"),
// empty outside Enterprise Grid.
func enterpriseOf(workspace string) string {
	if ent, _, ok := strings.Cut(workspace, "/"); ok {
		return ent
	}
	return ""
}

// refreshBefore is how long before its expiry a rotating token is refreshed.
const refreshBefore = 5 * time.Minute

// expiring reports whether i's token rotates and expires within refreshBefore of now.
func (i Installation) expiring(now time.Time) bool {
	return !i.ExpiresAt.IsZero() && !now.Add(refreshBefore).Before(i.ExpiresAt)
}

// installRecheck is how long a cached workspace client is used before the install store is read
// again. The store (Redis, shared by every process) is the truth: an install another process
// deleted (app_uninstalled, tokens_revoked) or replaced (a reinstall, a rotated token) stops
// being used here within this time.
const installRecheck = 2 * time.Second

// teamClient is a cached Web API client with the install it was made from (for the configured
// bot token, an install holding only that token) and when the store last confirmed it.
type teamClient struct {
	api     *slackgo.Client
	inst    Installation
	checked time.Time
}

// usable reports whether tc may be used at now without reading the store again.
func (tc *teamClient) usable(now time.Time) bool {
	return now.Sub(tc.checked) < installRecheck && !tc.inst.expiring(now)
}

// errNotInstalled: a workspace the app has no token for.
func errNotInstalled(team string) error {
	return &APIError{Method: "install", Code: "not_installed:" + team, kinds: []error{channels.ErrUnreachable}}
}

// client returns the Web API client for a conversation's workspace: the installed workspace's
// bot token (refreshed first when it rotates and expires soon) or, for the configured bot
// token's own workspace, that token.
func (c *Channel) client(ctx context.Context, workspace string) (*slackgo.Client, error) {
	tc, err := c.teamClient(ctx, workspace)
	if err != nil {
		return nil, err
	}
	return tc.api, nil
}

// token returns the bot token client's calls for workspace carry.
func (c *Channel) token(ctx context.Context, workspace string) (string, error) {
	tc, err := c.teamClient(ctx, workspace)
	if err != nil {
		return "", err
	}
	return tc.inst.BotToken, nil
}

// teamClient is lookupTeam with a workspace the app cannot serve as an error.
func (c *Channel) teamClient(ctx context.Context, workspace string) (*teamClient, error) {
	tc, err := c.lookupTeam(ctx, workspace)
	if err != nil {
		return nil, err
	}
	if tc == nil {
		return nil, errNotInstalled(teamOf(workspace))
	}
	return tc, nil
}

// lookupTeam returns the client serving workspace, or nil when the app is not installed there.
// Without an Installations store every workspace is served by the configured bot token. With
// one, a workspace is served by its install (or its organization's org-wide install), and the
// configured bot token serves only the workspace it belongs to (auth.test's team at Start):
// never a workspace whose install was deleted, whose messages it must not carry.
func (c *Channel) lookupTeam(ctx context.Context, workspace string) (*teamClient, error) {
	if c.cfg.Installations == nil {
		return c.base, nil
	}
	team := teamOf(workspace)
	ent, _, grid := strings.Cut(workspace, "/")
	if v, ok := c.teamClients.Load(team); ok {
		if tc := v.(*teamClient); tc.usable(c.now()) {
			return tc, nil
		}
	}
	// One lookup (and refresh) at a time: a rotating token is refreshed once, not by every
	// caller that found it expiring.
	c.installMu.Lock()
	defer c.installMu.Unlock()
	var cached *teamClient
	if v, ok := c.teamClients.Load(team); ok {
		if cached = v.(*teamClient); cached.usable(c.now()) {
			return cached, nil // another caller read the store meanwhile
		}
	}
	inst, found, err := c.cfg.Installations.Installation(ctx, team)
	if err == nil && !found && grid {
		inst, found, err = c.cfg.Installations.Installation(ctx, ent) // an org-wide install
	}
	if err != nil {
		if cached != nil && !cached.inst.expiring(c.now()) {
			// The store is unreachable: keep serving with the token last confirmed rather than
			// failing every send until it is back (Slack refuses a revoked token anyway).
			// It is tried again after installRecheck, not by every call meanwhile.
			c.log.Warn("slack: re-reading a workspace's install failed; using the one read before", "team", team, "err", err)
			tc := &teamClient{api: cached.api, inst: cached.inst, checked: c.now()}
			c.teamClients.Store(team, tc)
			return tc, nil
		}
		return nil, fmt.Errorf("slack: reading the install of %s: %w", team, err)
	}
	if !found || inst.BotToken == "" {
		c.teamClients.Delete(team) // uninstalled, maybe by another process
		// An install without a token is the mark the configured token's workspace left when it
		// uninstalled the app (markUninstalled), maybe in another process: not served.
		if !found && c.servesBase(workspace) {
			// Cached like an install, so the configured token's own workspace costs a store
			// read every installRecheck, not one (under installMu) per event and call.
			tc := &teamClient{api: c.base.api, inst: c.base.inst, checked: c.now()}
			c.teamClients.Store(team, tc)
			return tc, nil
		}
		return nil, nil
	}
	if inst.expiring(c.now()) && inst.RefreshToken != "" {
		if inst, err = c.refresh(ctx, inst); err != nil {
			return nil, err
		}
	}
	tc := &teamClient{inst: inst, checked: c.now()}
	if cached != nil && cached.inst.BotToken == inst.BotToken {
		tc.api = cached.api // confirmed unchanged: keep the client
	} else {
		tc.api = c.newAPI(inst.BotToken)
	}
	c.teamClients.Store(team, tc)
	return tc, nil
}

// servesBase reports whether the configured bot token may carry workspace's calls: it is the
// token's own workspace (or a workspace of its organization, for an org-wide token), and that
// workspace has not uninstalled the app as this process saw (as another process saw it, the
// store's mark tells: see lookupTeam).
func (c *Channel) servesBase(workspace string) bool {
	if c.cfg.BotToken == "" {
		return false
	}
	_, me := c.state()
	team, ent := teamOf(workspace), enterpriseOf(workspace)
	switch {
	case me.team != "" && team == me.team:
	case me.team == "" && me.enterprise != "" && ent == me.enterprise:
	default:
		return false
	}
	return !c.isRevoked(team) && !c.isRevoked(me.enterprise)
}

// isRevoked reports whether this process saw id (a team or an enterprise) uninstall the app.
func (c *Channel) isRevoked(id string) bool {
	if id == "" {
		return false
	}
	_, gone := c.revoked.Load(id)
	return gone
}

func (c *Channel) newAPI(token string) *slackgo.Client {
	c.redact.Add(token)
	return slackgo.New(token, slackgo.OptionAPIURL(c.cfg.APIURL), slackgo.OptionHTTPClient(c.cfg.HTTPClient))
}

// refresh trades inst's refresh token for a new bot token (token rotation) and saves it.
func (c *Channel) refresh(ctx context.Context, inst Installation) (Installation, error) {
	resp, err := slackgo.RefreshOAuthV2TokenContext(ctx, c.cfg.HTTPClient, c.cfg.ClientID, c.cfg.ClientSecret, inst.RefreshToken,
		slackgo.OAuthOptionAPIURL(c.cfg.APIURL))
	if err != nil {
		return inst, fmt.Errorf("slack: refreshing the token of %s: %w", inst.Team, c.web.apiError("oauth.v2.access", err))
	}
	inst.BotToken, inst.RefreshToken = resp.AccessToken, resp.RefreshToken
	inst.ExpiresAt = expiry(c.now(), resp.ExpiresIn)
	if err := c.cfg.Installations.SaveInstallation(ctx, inst); err != nil {
		return inst, fmt.Errorf("slack: saving the refreshed token of %s: %w", inst.Team, err)
	}
	c.log.Info("slack: rotated a workspace's bot token", "team", inst.Team, "expires", inst.ExpiresAt)
	return inst, nil
}

func expiry(now time.Time, expiresIn int) time.Time {
	if expiresIn <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(expiresIn) * time.Second)
}

// forgetInstall drops a workspace's install after app_uninstalled or revoked tokens; for the
// configured bot token's workspace it leaves the uninstall's mark in its place, so that every
// process sharing the store stops using that token there (see Installations).
// The store is changed first and the cached client dropped after, under installMu, so that no
// lookup caches the install again in between. A store that cannot be changed is logged and
// returned.
func (c *Channel) forgetInstall(ctx context.Context, team string) error {
	c.installMu.Lock()
	defer c.installMu.Unlock()
	defer c.teamClients.Delete(team)
	if c.cfg.Installations == nil {
		return nil
	}
	if _, me := c.state(); c.cfg.BotToken != "" && team == me.team {
		return c.markUninstalled(ctx, team)
	}
	if err := c.cfg.Installations.DeleteInstallation(ctx, team); err != nil {
		c.log.Error("slack: deleting an uninstalled workspace's token failed", "team", team, "err", err)
		return err
	}
	return nil
}

// markUninstalled saves the uninstall's mark of id, the configured bot token's team or
// organization, replacing its install if it had one.
func (c *Channel) markUninstalled(ctx context.Context, id string) error {
	if err := c.cfg.Installations.SaveInstallation(ctx, Installation{Team: id}); err != nil {
		c.log.Error("slack: recording that the bot token's workspace uninstalled the app failed; other processes keep using the token", "team", id, "err", err)
		return err
	}
	return nil
}

// clearUninstalled deletes the uninstall's marks of the configured bot token's team and
// organization, once auth.test accepted the token at Start: the app is installed there again.
// A store that cannot be read or changed leaves the marks (the workspace stays unserved) and
// is logged.
func (c *Channel) clearUninstalled(ctx context.Context, me self) {
	if c.cfg.Installations == nil || c.cfg.BotToken == "" {
		return
	}
	for _, id := range []string{me.team, me.enterprise} {
		if id == "" {
			continue
		}
		inst, found, err := c.cfg.Installations.Installation(ctx, id)
		if err == nil && found && inst.BotToken == "" {
			err = c.cfg.Installations.DeleteInstallation(ctx, id)
			if err == nil {
				c.log.Info("slack: the bot token's workspace was marked uninstalled; auth.test accepts the token, so it is served again", "team", id)
			}
		}
		if err != nil {
			c.log.Warn("slack: clearing the bot token's uninstall mark failed", "team", id, "err", err)
		}
	}
}

// forgetEnterprise drops every install of an Enterprise Grid organization after its org-wide
// install was removed: the cached clients of its workspaces (which used the org's token or
// their own) and the stored installs. A store that cannot be changed is logged and returned.
func (c *Channel) forgetEnterprise(ctx context.Context, enterprise string) error {
	c.installMu.Lock()
	defer c.installMu.Unlock()
	defer c.teamClients.Range(func(team, v any) bool {
		if inst := v.(*teamClient).inst; team == enterprise || inst.Team == enterprise || inst.Enterprise == enterprise {
			c.teamClients.Delete(team)
		}
		return true
	})
	if c.cfg.Installations == nil {
		return nil
	}
	if err := c.cfg.Installations.DeleteEnterprise(ctx, enterprise); err != nil {
		c.log.Error("slack: deleting an uninstalled organization's tokens failed", "enterprise", enterprise, "err", err)
		return err
	}
	if _, me := c.state(); c.cfg.BotToken != "" && enterprise == me.enterprise {
		return c.markUninstalled(ctx, enterprise)
	}
	return nil
}

var errNoInstallations = errors.New("slack: OAuth install needs an Installations store")
