package render

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// ActionKind says what an interactive id asks for when it comes back.
type ActionKind uint8

// Action kinds. Field and Option of an ActionID are meaningful as noted.
const (
	// ActionButton is a card action button; Option is the caller's value.
	ActionButton ActionKind = iota + 1
	// ActionChoose picks option Option of form field Field (a button, or the
	// value of a select, radio or checkbox option).
	ActionChoose
	// ActionToggle flips option Option of multi_choice field Field (Telegram).
	ActionToggle
	// ActionSelect is a select menu or input element for field Field; the
	// values it returns are ActionChoose ids.
	ActionSelect
	// ActionSubmit submits the form (a modal's submit, or "Done" after toggling
	// options of field Field).
	ActionSubmit
	// ActionOpenForm asks to open the form as a modal (Slack, Discord).
	ActionOpenForm
	// ActionText is a text input answering field Field.
	ActionText
	// ActionFreeText is the "answer in your own words" input or button.
	ActionFreeText
	// ActionSkip skips optional field Field.
	ActionSkip
	actionKindEnd
)

var kindNames = [...]string{"", "button", "choose", "toggle", "select", "submit", "open_form", "text", "free_text", "skip"}

// String names the kind for logs.
func (k ActionKind) String() string {
	if k == 0 || k >= actionKindEnd {
		return fmt.Sprintf("ActionKind(%d)", uint8(k))
	}
	return kindNames[k]
}

// ActionID is what an interactive element resumes: which kind of action, on
// which clarification (or run) token, for which form field and option.
type ActionID struct {
	Kind   ActionKind
	Token  string
	Field  int // 0–255
	Option int // 0–255
}

// Interactive id limits.
const (
	// MaxTokenLen is the longest token an ActionID may carry.
	MaxTokenLen = 40
	// MaxActionLen is the longest encoded id; it fits Telegram's 64-byte
	// callback_data (Discord allows 100, Slack 255).
	MaxActionLen = 64
	macLen       = 12 // truncated HMAC-SHA256 bytes
	macChars     = 16 // base64url of macLen bytes
	headerLen    = 6  // version, kind, field (2 hex), option (2 hex)
	minKeyLen    = 16
	actionDomain = "switchboard/render/action/v1\x00"
)

// Sentinel errors; DecodeAction's errors are *ActionError wrapping one of the
// first two, so classify with errors.Is.
var (
	ErrMalformedAction = errors.New("render: malformed interactive id")
	ErrForgedAction    = errors.New("render: interactive id signature mismatch")
	ErrNoKey           = errors.New("render: no action key")
	ErrBadToken        = errors.New("render: invalid action token")
)

// ActionError is the error DecodeAction returns: Err is ErrMalformedAction or
// ErrForgedAction and Reason says what was wrong (never the key).
type ActionError struct {
	Reason string
	Err    error
}

func (e *ActionError) Error() string { return e.Err.Error() + ": " + e.Reason }

// Unwrap returns the sentinel so errors.Is works.
func (e *ActionError) Unwrap() error { return e.Err }

// Key signs and verifies interactive ids. Its bytes never print: String,
// GoString and Format are redacted.
type Key struct{ secret []byte }

// NewKey returns a Key holding a copy of secret, which must be at least 16
// bytes (use 32 random bytes).
func NewKey(secret []byte) (Key, error) {
	if len(secret) < minKeyLen {
		return Key{}, fmt.Errorf("render: action key is %d bytes, want at least %d", len(secret), minKeyLen)
	}
	return Key{secret: append([]byte(nil), secret...)}, nil
}

// String is redacted.
func (Key) String() string { return "render.Key(redacted)" }

// GoString is redacted.
func (Key) GoString() string { return "render.Key(redacted)" }

// Format is redacted for every verb.
func (k Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

func (k Key) valid() bool { return len(k.secret) >= minKeyLen }

const hexDigits = "0123456789abcdef"

func checkToken(t string) error {
	if t == "" || len(t) > MaxTokenLen {
		return fmt.Errorf("%w: length %d, want 1–%d", ErrBadToken, len(t), MaxTokenLen)
	}
	for i := 0; i < len(t); i++ {
		if !tokenByte(t[i]) {
			return fmt.Errorf("%w: byte %d is not [A-Za-z0-9_-]", ErrBadToken, i)
		}
	}
	return nil
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// EncodeAction returns the signed, compact form of id (at most MaxActionLen
// bytes of [A-Za-z0-9_.-]), for use as a Slack action_id or option value, a
// Discord custom_id or a Telegram callback_data.
func EncodeAction(k Key, id ActionID) (string, error) {
	if !k.valid() {
		return "", ErrNoKey
	}
	if id.Kind == 0 || id.Kind >= actionKindEnd {
		return "", fmt.Errorf("render: encode action: unknown kind %d", id.Kind)
	}
	if id.Field < 0 || id.Field > 255 || id.Option < 0 || id.Option > 255 {
		return "", fmt.Errorf("render: encode action: field %d or option %d outside 0–255", id.Field, id.Option)
	}
	if err := checkToken(id.Token); err != nil {
		return "", fmt.Errorf("render: encode action: %w", err)
	}
	buf := make([]byte, 0, headerLen+len(id.Token)+1+macChars)
	buf = append(buf, '1', 'a'+byte(id.Kind)-1,
		hexDigits[id.Field>>4], hexDigits[id.Field&15],
		hexDigits[id.Option>>4], hexDigits[id.Option&15])
	buf = append(buf, id.Token...)
	mac := actionMAC(k, buf)
	buf = append(buf, '.')
	buf = base64.RawURLEncoding.AppendEncode(buf, mac[:macLen])
	return string(buf), nil
}

func actionMAC(k Key, payload []byte) []byte {
	h := hmac.New(sha256.New, k.secret)
	h.Write([]byte(actionDomain))
	h.Write(payload)
	return h.Sum(nil)
}

// DecodeAction verifies and parses an id made by EncodeAction with the same
// key. Malformed input yields an *ActionError wrapping ErrMalformedAction; a
// well-formed id whose signature does not match (forged, altered, or signed
// with another key) wraps ErrForgedAction. A zero Key returns ErrNoKey.
func DecodeAction(k Key, s string) (ActionID, error) {
	if !k.valid() {
		return ActionID{}, ErrNoKey
	}
	bad := func(reason string) (ActionID, error) {
		return ActionID{}, &ActionError{Reason: reason, Err: ErrMalformedAction}
	}
	if len(s) > MaxActionLen {
		return bad("too long")
	}
	if len(s) < headerLen+1+1+macChars {
		return bad("too short")
	}
	dot := len(s) - macChars - 1
	if s[dot] != '.' {
		return bad("no signature separator")
	}
	payload, sig := s[:dot], s[dot+1:]
	if payload[0] != '1' {
		return bad("unknown version")
	}
	kind := ActionKind(payload[1]-'a') + 1
	if payload[1] < 'a' || kind >= actionKindEnd {
		return bad("unknown kind")
	}
	field, ok1 := hexByte(payload[2], payload[3])
	option, ok2 := hexByte(payload[4], payload[5])
	if !ok1 || !ok2 {
		return bad("bad field or option")
	}
	token := payload[headerLen:]
	if checkToken(token) != nil {
		return bad("bad token")
	}
	got := make([]byte, macLen)
	if n, err := base64.RawURLEncoding.Decode(got, []byte(sig)); err != nil || n != macLen {
		return bad("bad signature encoding")
	}
	// Reject non-canonical encodings so one id has exactly one spelling.
	if base64.RawURLEncoding.EncodeToString(got) != sig {
		return bad("non-canonical signature")
	}
	want := actionMAC(k, []byte(payload))
	if !hmac.Equal(got, want[:macLen]) {
		return ActionID{}, &ActionError{Reason: "signature does not match", Err: ErrForgedAction}
	}
	return ActionID{Kind: kind, Token: token, Field: field, Option: option}, nil
}

func hexByte(hi, lo byte) (int, bool) {
	h, ok1 := hexVal(hi)
	l, ok2 := hexVal(lo)
	return h<<4 | l, ok1 && ok2
}

func hexVal(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	}
	return 0, false
}

// signer encodes ids for one render, keeping the first error so renderers can
// build their output straight and check once at the end.
type signer struct {
	key Key
	err error
}

func (s *signer) sign(id ActionID) string {
	if s.err != nil {
		return ""
	}
	v, err := EncodeAction(s.key, id)
	if err != nil {
		s.err = fmt.Errorf("render: signing %s id: %w", id.Kind, err)
	}
	return v
}
