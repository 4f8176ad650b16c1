package slack

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// DefaultAuthorizeURL is Slack's OAuth v2 authorize page.
const DefaultAuthorizeURL = "https://slack.com/oauth/v2/authorize"

// DefaultScopes are the bot scopes an install asks for: what this adapter reads and calls.
var DefaultScopes = []string{"app_mentions:read", "channels:history", "groups:history", "im:history", "mpim:history",
	"chat:write", "assistant:write", "commands", "files:read", "files:write"}

// stateTTL is how long an install link stays usable.
const stateTTL = 10 * time.Minute

// oauth is the OAuth v2 install flow (InstallHandler, OAuthHandler): a signed, expiring state
// per install link, claimed once in the Installations store, and the workspace's install saved
// there when Slack confirms it.
type oauth struct {
	cfg      *Config
	web      *webAPI
	installs *installs
	clock    *kit.Clock
	log      *slog.Logger
}

// newState is a signed, expiring OAuth state: base64url(nonce ‖ expiry) "." base64url(HMAC).
func (o *oauth) newState() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:16]); err != nil {
		return "", err
	}
	binary.BigEndian.PutUint64(b[16:], uint64(o.clock.Now().Add(stateTTL).Unix()))
	mac := hmac.New(sha256.New, o.cfg.StateKey)
	mac.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:]) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// checkState verifies a state's signature (constant time) and expiry and returns its nonce.
func (o *oauth) checkState(state string) (nonce string, err error) {
	body, sig, ok := strings.Cut(state, ".")
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	s, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || len(b) != 24 {
		return "", errors.New("malformed state")
	}
	mac := hmac.New(sha256.New, o.cfg.StateKey)
	mac.Write(b)
	if !hmac.Equal(mac.Sum(nil), s) {
		return "", errors.New("state signature does not verify")
	}
	if exp := time.Unix(int64(binary.BigEndian.Uint64(b[16:])), 0); o.clock.Now().After(exp) {
		return "", errors.New("state expired")
	}
	return base64.RawURLEncoding.EncodeToString(b[:16]), nil
}

// InstallHandler starts an install (GET): it redirects to Slack's authorize page with the app's
// client id, scopes, redirect URL and a fresh signed state good for ten minutes and one install.
// Mount it where users go to add the app to a workspace.
func (o *oauth) InstallHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.cfg.ClientID == "" {
			http.Error(w, "install is not configured", http.StatusNotFound)
			return
		}
		state, err := o.newState()
		if err != nil {
			http.Error(w, "try again", http.StatusInternalServerError)
			return
		}
		q := url.Values{"client_id": {o.cfg.ClientID}, "scope": {strings.Join(o.cfg.Scopes, ",")},
			"redirect_uri": {o.cfg.RedirectURL}, "state": {state}}
		http.Redirect(w, r, o.cfg.AuthorizeURL+"?"+q.Encode(), http.StatusFound)
	})
}

// OAuthHandler is the redirect URL Slack sends the user back to (GET ?code=…&state=…). It
// refuses (400) a missing, forged, expired or already used state, a missing code, an error
// Slack passed back (the user cancelled) and a code Slack does not exchange; when Slack does
// not answer the exchange (network error, HTTP 5xx, 429) it says so (502) and asks for a new
// install. Every refusal is a short page that echoes nothing of the query. Otherwise it
// exchanges the code (oauth.v2.access), saves the workspace's bot token in Installations and
// says so. A workspace that uninstalled before is served again from then on.
func (o *oauth) OAuthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.cfg.ClientID == "" {
			http.Error(w, "install is not configured", http.StatusNotFound)
			return
		}
		code, ok := o.callback(w, r)
		if !ok {
			return
		}
		resp, ok := o.exchange(w, r, code)
		if !ok {
			return
		}
		o.save(w, r, resp)
	})
}

// callback checks the query Slack sent the user back with: no error passed back, a state of
// this app's not used before (claimed now), a code. ok is false when it answered the request
// with a refusal.
func (o *oauth) callback(w http.ResponseWriter, r *http.Request) (code string, ok bool) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// The query is the user's browser's to write: name only Slack's documented code,
		// never echo the text.
		text := "The app was not installed. Start the install again."
		if e == "access_denied" {
			text = "The install was cancelled. Start the install again to add the app."
		}
		page(w, http.StatusBadRequest, text)
		return "", false
	}
	nonce, err := o.checkState(q.Get("state"))
	if err != nil {
		o.log.Warn("slack: refused an install callback", "reason", err.Error(), "remote", r.RemoteAddr)
		page(w, http.StatusBadRequest, "This install link is not valid or has expired. Start the install again.")
		return "", false
	}
	code = q.Get("code")
	if code == "" {
		o.log.Warn("slack: refused an install callback", "reason", "no code", "remote", r.RemoteAddr)
		page(w, http.StatusBadRequest, "Slack did not confirm the install. Start the install again.")
		return "", false
	}
	claimed, err := o.cfg.Installations.ClaimState(r.Context(), nonce, stateTTL)
	switch {
	case err != nil:
		o.log.Error("slack: recording an install state failed", "err", err)
		page(w, http.StatusInternalServerError, "Something went wrong. Start the install again.")
		return "", false
	case !claimed:
		o.log.Warn("slack: refused a replayed install callback", "remote", r.RemoteAddr)
		page(w, http.StatusBadRequest, "This install link was used already. Start the install again.")
		return "", false
	}
	return code, true
}

// exchange trades code for the workspace's bot token (oauth.v2.access). ok is false when it
// answered the request with a refusal: Slack refused the code, or could not be reached.
func (o *oauth) exchange(w http.ResponseWriter, r *http.Request, code string) (resp *slackgo.OAuthV2Response, ok bool) {
	resp, err := slackgo.GetOAuthV2ResponseContext(r.Context(), o.cfg.HTTPClient, o.cfg.ClientID, o.cfg.ClientSecret,
		code, o.cfg.RedirectURL, slackgo.OAuthOptionAPIURL(o.cfg.APIURL))
	// slack-go answers a nil response when the call itself failed (network, 5xx, 429):
	// check the error before reading anything of it.
	if err != nil || resp == nil {
		err = o.web.apiError("oauth.v2.access", err)
		o.log.Warn("slack: exchanging an install code failed", "err", err, "remote", r.RemoteAddr)
		if refused(err) {
			page(w, http.StatusBadRequest, "Slack did not confirm the install. Start the install again.")
		} else {
			page(w, http.StatusBadGateway, "Slack could not be reached to finish the install. Start the install again in a minute.")
		}
		return nil, false
	}
	return resp, true
}

// save keeps the install Slack confirmed in Installations, serves its workspace from then on,
// and says so.
func (o *oauth) save(w http.ResponseWriter, r *http.Request, resp *slackgo.OAuthV2Response) {
	owner := resp.Team.ID
	if resp.IsEnterpriseInstall {
		owner = resp.Enterprise.ID // an org-wide install serves every workspace of the org
	}
	if owner == "" || !strings.HasPrefix(resp.AccessToken, "xoxb-") {
		o.log.Warn("slack: an install code exchange answered no workspace or no bot token",
			"has_team", owner != "", "token_type", resp.TokenType)
		page(w, http.StatusBadRequest, "Slack did not confirm the install. Start the install again.")
		return
	}
	inst := Installation{Team: owner, Enterprise: resp.Enterprise.ID, BotUserID: resp.BotUserID,
		BotToken: resp.AccessToken, RefreshToken: resp.RefreshToken, ExpiresAt: expiry(o.clock.Now(), resp.ExpiresIn)}
	if err := o.cfg.Installations.SaveInstallation(r.Context(), inst); err != nil {
		o.log.Error("slack: saving an install failed", "team", inst.Team, "err", err)
		page(w, http.StatusInternalServerError, "Something went wrong. Start the install again.")
		return
	}
	o.installs.installed(inst)
	o.log.Info("slack: installed in a workspace", "team", inst.Team, "enterprise", inst.Enterprise)
	name := resp.Team.Name
	if resp.IsEnterpriseInstall {
		name = resp.Enterprise.Name
	}
	page(w, http.StatusOK, fmt.Sprintf("Installed in %s. You can close this page.", name))
}

// refused reports whether Slack answered the exchange with a refusal of its own (ok:false, such
// as invalid_code), as opposed to not answering it (network error, HTTP 5xx, 429).
func refused(err error) bool {
	ae, ok := errors.AsType[*APIError](err)
	return ok && !strings.HasPrefix(ae.Code, "http_")
}

func page(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Switchboard</title><p>%s</p>\n", html.EscapeString(text))
}
