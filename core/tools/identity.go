package tools

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Identity is who a tool call works for, taken from the run's signed envelope — never from
// model output. Every call carries it in the request's _meta under MetaKey, and a call to an
// HTTP server also in the X-Switchboard-* headers, signed when Config.IdentityKey is set.
type Identity struct {
	Platform      string `json:"platform"`
	ChannelUserID string `json:"channel_user_id"`
	DisplayName   string `json:"display_name,omitempty"`
	Conversation  string `json:"conversation"`
	RunID         string `json:"run_id"`
	// Admin is whether the user has admin rights here; it decides policy, and is not sent.
	Admin bool `json:"-"`
	// Scope, when not nil, narrows the tools to those of the place's profile: only tools it
	// allows are offered or called, whatever the policy allows. Not sent.
	Scope *Scope `json:"-"`
}

// Scope is the tools a place's profile may use (profiles.<name>.tools): offered names matching
// one of Globs (path.Match, as the policy's). No globs: no tools.
type Scope struct {
	Globs []string
}

// Allows reports whether name is one of the scope's tools; a nil scope allows every tool.
func (s *Scope) Allows(name string) bool { return s == nil || matchAny(s.Globs, name) }

// MetaKey is the key of the identity object in a tools/call request's _meta.
const MetaKey = "switchboard/identity"

// The identity headers of a call to an HTTP server. The display name is percent-encoded
// (url.PathEscape), as header values are ASCII.
const (
	HeaderPlatform     = "X-Switchboard-Platform"
	HeaderUser         = "X-Switchboard-User"
	HeaderUserName     = "X-Switchboard-User-Name"
	HeaderConversation = "X-Switchboard-Conversation"
	HeaderRun          = "X-Switchboard-Run"
	HeaderTimestamp    = "X-Switchboard-Timestamp"
	HeaderSignature    = "X-Switchboard-Signature"
)

type identityKey struct{}

// WithIdentity returns ctx carrying id for the tool calls made under it.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity ctx carries; ok is false outside a run.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

func (id Identity) meta() map[string]any {
	m := map[string]any{
		"platform":        id.Platform,
		"channel_user_id": id.ChannelUserID,
		"conversation":    id.Conversation,
		"run_id":          id.RunID,
	}
	if id.DisplayName != "" {
		m["display_name"] = id.DisplayName
	}
	return m
}

// signedPayload is what the signature covers: a version, the timestamp, every identity field
// and the SHA-256 of the request body, one per line, so that neither the identity nor the
// call can be changed without the key.
func signedPayload(id Identity, ts string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(strings.Join([]string{"v1", ts, id.Platform, id.ChannelUserID, id.DisplayName,
		id.Conversation, id.RunID, hex.EncodeToString(sum[:])}, "\n"))
}

// Sign returns the X-Switchboard-Signature value for a request carrying id at ts with body:
// "v1=" and the hex HMAC-SHA256 of the signed payload (see docs/tools.md).
func Sign(key []byte, id Identity, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(signedPayload(id, strconv.FormatInt(ts.Unix(), 10), body))
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// setHeaders writes id's headers on h, signed with key when key is set.
func setHeaders(h http.Header, key []byte, id Identity, now time.Time, body []byte) {
	h.Set(HeaderPlatform, id.Platform)
	h.Set(HeaderUser, id.ChannelUserID)
	h.Set(HeaderUserName, url.PathEscape(id.DisplayName))
	h.Set(HeaderConversation, id.Conversation)
	h.Set(HeaderRun, id.RunID)
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	if len(key) > 0 {
		h.Set(HeaderSignature, Sign(key, id, now, body))
	}
}

// ErrBadSignature is returned by Verify when a request's identity headers do not verify.
var ErrBadSignature = errors.New("tools: the identity signature does not verify")

// Verify checks the identity headers of a request a tool server received, with its body, and
// returns the identity: the signature must match key and the timestamp be within maxAge of now
// (either way). It is what a Go server author calls; docs/tools.md shows it in other words.
func Verify(key []byte, h http.Header, body []byte, maxAge time.Duration, now time.Time) (Identity, error) {
	ts := h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: no valid %s", ErrBadSignature, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return Identity{}, fmt.Errorf("%w: the timestamp is %s away from now", ErrBadSignature, d.Round(time.Second))
	}
	name, err := url.PathUnescape(h.Get(HeaderUserName))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %s is not percent-encoded", ErrBadSignature, HeaderUserName)
	}
	id := Identity{Platform: h.Get(HeaderPlatform), ChannelUserID: h.Get(HeaderUser), DisplayName: name,
		Conversation: h.Get(HeaderConversation), RunID: h.Get(HeaderRun)}
	got, ok := strings.CutPrefix(h.Get(HeaderSignature), "v1=")
	want := Sign(key, id, time.Unix(sec, 0), body)[3:]
	if !ok || !hmac.Equal([]byte(got), []byte(want)) {
		return Identity{}, ErrBadSignature
	}
	return id, nil
}

// identityTransport adds the identity headers of the call in the request's context to every
// request that carries one (the tools/call POSTs), and the server's configured headers to all.
type identityTransport struct {
	base    http.RoundTripper
	headers func() http.Header // the configured headers, secrets read from files at connect
	key     []byte
	now     func() time.Time
}

func (t *identityTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.headers() {
		r.Header[k] = vs
	}
	if id, ok := IdentityFrom(r.Context()); ok {
		var body []byte
		if r.GetBody != nil {
			rc, err := r.GetBody()
			if err != nil {
				return nil, fmt.Errorf("tools: reading the request body to sign it: %w", err)
			}
			body, err = readAllClose(rc)
			if err != nil {
				return nil, fmt.Errorf("tools: reading the request body to sign it: %w", err)
			}
		}
		setHeaders(r.Header, t.key, id, t.now(), body)
	}
	return t.base.RoundTrip(r)
}
