package threads

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"
)

// Tokens are short tokens standing for a longer payload, for platforms whose callback data is
// tiny (Telegram's 64 bytes).
type Tokens struct{ *shared }

// tokenLen is the length of tokens Tokens.Put issues: 9 random bytes in unpadded base64url, 72
// bits, which fits Telegram's 64-byte callback data with room for a verb.
const tokenLen = 12

// tokenAttempts bounds retries when a fresh token collides with a live one (astronomically rare).
const tokenAttempts = 4

// Put stores payload under a new short token for ttl and returns the token: 12 characters
// of the URL-safe base64 alphabet (A–Z a–z 0–9 - _), unguessable, never reused while live. Use it
// where a platform's callback data is too small for the real payload. ttl must be positive.
func (t *Tokens) Put(ctx context.Context, payload []byte, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("threads: put token: %w", invalid("ttl must be positive"))
	}
	var raw [9]byte
	for range tokenAttempts {
		rand.Read(raw[:])
		tok := base64.RawURLEncoding.EncodeToString(raw[:])
		ok, err := t.r.setNX(ctx, t.keys.token(tok), payload, ttl)
		if err != nil {
			return "", fmt.Errorf("threads: put token: %w", err)
		}
		if ok {
			return tok, nil
		}
	}
	return "", fmt.Errorf("threads: put token: %d collisions in a row", tokenAttempts)
}

// Get returns the payload stored under token. A string that is not shaped like an issued
// token is ErrInvalidToken (checked before Redis is asked, as tokens come from outside); an
// unknown or expired token is ErrTokenNotFound. Reading does not consume the token.
func (t *Tokens) Get(ctx context.Context, token string) ([]byte, error) {
	if err := ParseToken(token); err != nil {
		return nil, err
	}
	b, found, err := t.r.get(ctx, t.keys.token(token))
	if err != nil {
		return nil, fmt.Errorf("threads: get token: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("threads: get token %s: %w", token, ErrTokenNotFound)
	}
	return b, nil
}

// ParseToken reports whether token has the shape Tokens.Put issues (exactly 12 characters of the
// URL-safe base64 alphabet); otherwise it returns an error matching ErrInvalidToken.
func ParseToken(token string) error {
	if len(token) != tokenLen {
		return fmt.Errorf("threads: token of %d bytes, want %d: %w", len(token), tokenLen, ErrInvalidToken)
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("threads: token has a character outside base64url at %d: %w", i, ErrInvalidToken)
		}
	}
	return nil
}
