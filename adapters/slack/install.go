package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
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

// installs keeps the Web API clients of the workspaces the app serves: the configured bot
// token's, and — with an Installations store — each installed workspace's (client, token),
// read again from the store every installRecheck and refreshed when its token rotates; and what
// an uninstall changes (uninstalled, uninstalledOrg). Safe for concurrent use.
type installs struct {
	cfg    *Config
	web    *webAPI
	redact *kit.Redactor
	clock  *kit.Clock
	log    *slog.Logger
	base   *teamClient // the configured bot token's client

	teamClients sync.Map   // team → *teamClient (installed workspaces)
	mu          sync.Mutex // one install lookup or token refresh at a time
	revoked     sync.Map   // team or enterprise id → struct{}: uninstalled, as this process saw

	homeMu sync.Mutex
	own    home
}

// home is the configured bot token's own workspace and organization (auth.test at Start): the
// only ones that token serves when workspaces install the app.
type home struct{ team, enterprise string }

// setHome records the configured bot token's workspace and organization (Start).
func (is *installs) setHome(team, enterprise string) {
	is.homeMu.Lock()
	defer is.homeMu.Unlock()
	is.own = home{team: team, enterprise: enterprise}
}

// home is the configured bot token's workspace and organization; zero before Start.
func (is *installs) home() home {
	is.homeMu.Lock()
	defer is.homeMu.Unlock()
	return is.own
}

// installed forgets what this process knew of inst's workspace — its cached client, its
// uninstall, its organization's — once the OAuth install saved it.
func (is *installs) installed(inst Installation) {
	is.teamClients.Delete(inst.Team)
	is.revoked.Delete(inst.Team)
	if inst.Enterprise != "" {
		is.revoked.Delete(inst.Enterprise) // a workspace of an organization that uninstalled is served again
	}
}

// client returns the Web API client for a conversation's workspace: the installed workspace's
// bot token (refreshed first when it rotates and expires soon) or, for the configured bot
// token's own workspace, that token.
func (is *installs) client(ctx context.Context, workspace string) (*slackgo.Client, error) {
	tc, err := is.teamClient(ctx, workspace)
	if err != nil {
		return nil, err
	}
	return tc.api, nil
}

// token returns the bot token client's calls for workspace carry.
func (is *installs) token(ctx context.Context, workspace string) (string, error) {
	tc, err := is.teamClient(ctx, workspace)
	if err != nil {
		return "", err
	}
	return tc.inst.BotToken, nil
}

// teamClient is lookupTeam with a workspace the app cannot serve as an error.
func (is *installs) teamClient(ctx context.Context, workspace string) (*teamClient, error) {
	tc, err := is.lookupTeam(ctx, workspace)
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
func (is *installs) lookupTeam(ctx context.Context, workspace string) (*teamClient, error) {
	if is.cfg.Installations == nil {
		return is.base, nil
	}
	team := teamOf(workspace)
	ent, _, grid := strings.Cut(workspace, "/")
	if v, ok := is.teamClients.Load(team); ok {
		if tc := v.(*teamClient); tc.usable(is.clock.Now()) {
			return tc, nil
		}
	}
	// One lookup (and refresh) at a time: a rotating token is refreshed once, not by every
	// caller that found it expiring.
	is.mu.Lock()
	defer is.mu.Unlock()
	var cached *teamClient
	if v, ok := is.teamClients.Load(team); ok {
		if cached = v.(*teamClient); cached.usable(is.clock.Now()) {
			return cached, nil // another caller read the store meanwhile
		}
	}
	inst, found, err := is.cfg.Installations.Installation(ctx, team)
	if err == nil && !found && grid {
		inst, found, err = is.cfg.Installations.Installation(ctx, ent) // an org-wide install
	}
	if err != nil {
		if cached != nil && !cached.inst.expiring(is.clock.Now()) {
			// The store is unreachable: keep serving with the token last confirmed rather than
			// failing every send until it is back (Slack refuses a revoked token anyway).
			// It is tried again after installRecheck, not by every call meanwhile.
			is.log.Warn("slack: re-reading a workspace's install failed; using the one read before", "team", team, "err", err)
			tc := &teamClient{api: cached.api, inst: cached.inst, checked: is.clock.Now()}
			is.teamClients.Store(team, tc)
			return tc, nil
		}
		return nil, fmt.Errorf("slack: reading the install of %s: %w", team, err)
	}
	if !found || inst.BotToken == "" {
		is.teamClients.Delete(team) // uninstalled, maybe by another process
		// An install without a token is the mark the configured token's workspace left when it
		// uninstalled the app (markUninstalled), maybe in another process: not served.
		if !found && is.servesBase(workspace) {
			// Cached like an install, so the configured token's own workspace costs a store
			// read every installRecheck, not one (under installMu) per event and call.
			tc := &teamClient{api: is.base.api, inst: is.base.inst, checked: is.clock.Now()}
			is.teamClients.Store(team, tc)
			return tc, nil
		}
		return nil, nil
	}
	if inst.expiring(is.clock.Now()) && inst.RefreshToken != "" {
		if inst, err = is.refresh(ctx, inst); err != nil {
			return nil, err
		}
	}
	tc := &teamClient{inst: inst, checked: is.clock.Now()}
	if cached != nil && cached.inst.BotToken == inst.BotToken {
		tc.api = cached.api // confirmed unchanged: keep the client
	} else {
		tc.api = is.newAPI(inst.BotToken)
	}
	is.teamClients.Store(team, tc)
	return tc, nil
}

// servesBase reports whether the configured bot token may carry workspace's calls: it is the
// token's own workspace (or a workspace of its organization, for an org-wide token), and that
// workspace has not uninstalled the app as this process saw (as another process saw it, the
// store's mark tells: see lookupTeam).
func (is *installs) servesBase(workspace string) bool {
	if is.cfg.BotToken == "" {
		return false
	}
	me := is.home()
	team, ent := teamOf(workspace), enterpriseOf(workspace)
	switch {
	case me.team != "" && team == me.team:
	case me.team == "" && me.enterprise != "" && ent == me.enterprise:
	default:
		return false
	}
	return !is.isRevoked(team) && !is.isRevoked(me.enterprise)
}

// isRevoked reports whether this process saw id (a team or an enterprise) uninstall the app.
func (is *installs) isRevoked(id string) bool {
	if id == "" {
		return false
	}
	_, gone := is.revoked.Load(id)
	return gone
}

func (is *installs) newAPI(token string) *slackgo.Client {
	is.redact.Add(token)
	return slackgo.New(token, slackgo.OptionAPIURL(is.cfg.APIURL), slackgo.OptionHTTPClient(is.cfg.HTTPClient))
}

// refresh trades inst's refresh token for a new bot token (token rotation) and saves it.
func (is *installs) refresh(ctx context.Context, inst Installation) (Installation, error) {
	resp, err := slackgo.RefreshOAuthV2TokenContext(ctx, is.cfg.HTTPClient, is.cfg.ClientID, is.cfg.ClientSecret, inst.RefreshToken,
		slackgo.OAuthOptionAPIURL(is.cfg.APIURL))
	if err != nil {
		return inst, fmt.Errorf("slack: refreshing the token of %s: %w", inst.Team, is.web.apiError("oauth.v2.access", err))
	}
	inst.BotToken, inst.RefreshToken = resp.AccessToken, resp.RefreshToken
	inst.ExpiresAt = expiry(is.clock.Now(), resp.ExpiresIn)
	if err := is.cfg.Installations.SaveInstallation(ctx, inst); err != nil {
		return inst, fmt.Errorf("slack: saving the refreshed token of %s: %w", inst.Team, err)
	}
	is.log.Info("slack: rotated a workspace's bot token", "team", inst.Team, "expires", inst.ExpiresAt)
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
func (is *installs) forgetInstall(ctx context.Context, team string) error {
	is.mu.Lock()
	defer is.mu.Unlock()
	defer is.teamClients.Delete(team)
	if is.cfg.Installations == nil {
		return nil
	}
	if me := is.home(); is.cfg.BotToken != "" && team == me.team {
		return is.markUninstalled(ctx, team)
	}
	if err := is.cfg.Installations.DeleteInstallation(ctx, team); err != nil {
		is.log.Error("slack: deleting an uninstalled workspace's token failed", "team", team, "err", err)
		return err
	}
	return nil
}

// markUninstalled saves the uninstall's mark of id, the configured bot token's team or
// organization, replacing its install if it had one.
func (is *installs) markUninstalled(ctx context.Context, id string) error {
	if err := is.cfg.Installations.SaveInstallation(ctx, Installation{Team: id}); err != nil {
		is.log.Error("slack: recording that the bot token's workspace uninstalled the app failed; other processes keep using the token", "team", id, "err", err)
		return err
	}
	return nil
}

// clearUninstalled deletes the uninstall's marks of the configured bot token's team and
// organization, once auth.test accepted the token at Start: the app is installed there again.
// A store that cannot be read or changed leaves the marks (the workspace stays unserved) and
// is logged.
func (is *installs) clearUninstalled(ctx context.Context) {
	if is.cfg.Installations == nil || is.cfg.BotToken == "" {
		return
	}
	me := is.home()
	for _, id := range []string{me.team, me.enterprise} {
		if id == "" {
			continue
		}
		inst, found, err := is.cfg.Installations.Installation(ctx, id)
		if err == nil && found && inst.BotToken == "" {
			err = is.cfg.Installations.DeleteInstallation(ctx, id)
			if err == nil {
				is.log.Info("slack: the bot token's workspace was marked uninstalled; auth.test accepts the token, so it is served again", "team", id)
			}
		}
		if err != nil {
			is.log.Warn("slack: clearing the bot token's uninstall mark failed", "team", id, "err", err)
		}
	}
}

// forgetEnterprise drops every install of an Enterprise Grid organization after its org-wide
// install was removed: the cached clients of its workspaces (which used the org's token or
// their own) and the stored installs. A store that cannot be changed is logged and returned.
func (is *installs) forgetEnterprise(ctx context.Context, enterprise string) error {
	is.mu.Lock()
	defer is.mu.Unlock()
	defer is.teamClients.Range(func(team, v any) bool {
		if inst := v.(*teamClient).inst; team == enterprise || inst.Team == enterprise || inst.Enterprise == enterprise {
			is.teamClients.Delete(team)
		}
		return true
	})
	if is.cfg.Installations == nil {
		return nil
	}
	if err := is.cfg.Installations.DeleteEnterprise(ctx, enterprise); err != nil {
		is.log.Error("slack: deleting an uninstalled organization's tokens failed", "enterprise", enterprise, "err", err)
		return err
	}
	if me := is.home(); is.cfg.BotToken != "" && enterprise == me.enterprise {
		return is.markUninstalled(ctx, enterprise)
	}
	return nil
}

var errNoInstallations = errors.New("slack: OAuth install needs an Installations store")

// uninstalledOrg stops work for every workspace of an Enterprise Grid organization after
// app_uninstalled or tokens_revoked for its org-wide install: every token stored under the
// enterprise is deleted, and events of its workspaces are dropped until it installs again.
// The error is the install store's, when it could not be changed.
func (is *installs) uninstalledOrg(enterprise, why string) error {
	is.revoked.Store(enterprise, struct{}{})
	err := is.forgetEnterprise(context.Background(), enterprise)
	is.log.Warn("slack: the app lost its access to an organization; the events of its workspaces are dropped from now on", "enterprise", enterprise, "event", why)
	if is.cfg.OnUninstall != nil {
		is.cfg.OnUninstall(enterprise)
	}
	return err
}

// uninstalled stops work for a workspace after app_uninstalled or tokens_revoked. The error
// is the install store's, when it could not be changed.
func (is *installs) uninstalled(team, why string) error {
	if team == "" {
		return nil
	}
	is.revoked.Store(team, struct{}{})
	err := is.forgetInstall(context.Background(), team)
	is.log.Warn("slack: the app lost its access to a workspace; its events are dropped from now on", "team", team, "event", why)
	if is.cfg.OnUninstall != nil {
		is.cfg.OnUninstall(team)
	}
	return err
}

// served reports whether events of workspace (a conversation key's workspace) are handled.
// With an Installations store the store decides, the same for every process sharing it: a
// workspace with no install (deleted by whichever process saw app_uninstalled) is not served,
// except the configured bot token's own workspace (see lookupTeam). Without a store, a
// workspace is served until this process sees it uninstall the app. A store that cannot be
// read does not drop the event: its answer fails or waits like any send.
func (is *installs) served(ctx context.Context, workspace string) bool {
	if is.cfg.Installations == nil || workspace == "" {
		return !is.isRevoked(teamOf(workspace)) && !is.isRevoked(enterpriseOf(workspace))
	}
	tc, err := is.lookupTeam(ctx, workspace)
	return err != nil || tc != nil
}
