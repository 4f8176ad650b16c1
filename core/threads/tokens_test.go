package threads

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTokens proves short tokens: 12 URL-safe characters, payload back byte for byte, unique,
// expiring with their TTL, and unknown or malformed tokens refused with typed errors.
func TestTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := newTestStore(t, c, Options{})
		payload := []byte("clar:01JCLAR000000000000000000A|choice=2|\x00binary")
		tok, err := s.Tokens().Put(ctx, payload, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := ParseToken(tok); err != nil || len(tok) > 12 {
			t.Errorf("token %q: %v; want ≤ 12 URL-safe characters", tok, err)
		}
		got, err := s.Tokens().Get(ctx, tok)
		if err != nil || string(got) != string(payload) {
			t.Errorf("Get = %q, %v; want %q", got, err, payload)
		}
		if ttl, err := c.PTTL(ctx, keysOf(s).token(tok)).Result(); err != nil || ttl <= 4*time.Minute || ttl > 5*time.Minute {
			t.Errorf("token TTL = %v, %v; want 5m", ttl, err)
		}
		seen := map[string]bool{tok: true}
		for range 50 {
			tk, err := s.Tokens().Put(ctx, []byte("x"), time.Minute)
			if err != nil || seen[tk] {
				t.Fatalf("Put = %q, %v; want a fresh token", tk, err)
			}
			seen[tk] = true
		}
		if _, err := s.Tokens().Get(ctx, "AAAAAAAAAAAA"); !errors.Is(err, ErrTokenNotFound) {
			t.Errorf("Get of an unknown token: %v, want ErrTokenNotFound", err)
		}
		if _, err := s.Tokens().Put(ctx, payload, 0); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Put with no TTL: %v, want ErrInvalidArgument", err)
		}
	})
}

func TestParseTokenMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, token string
	}{
		{"empty", ""},
		{"short", "abc"},
		{"long", "AAAAAAAAAAAAA"},
		{"padding", "AAAAAAAAAAA="},
		{"standard base64", "AAAAAAAAAA+/"},
		{"space", "AAAAA AAAAAA"},
		{"key separator", "AAAAA:AAAAAA"},
		{"glob", "AAAAA*AAAAAA"},
		{"unicode", "AAAAAAAAAAé"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ParseToken(tc.token); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("ParseToken(%q) = %v, want ErrInvalidToken", tc.token, err)
			}
		})
	}
	if err := ParseToken("Az09-_Az09-_"); err != nil {
		t.Errorf("ParseToken of a well-formed token: %v", err)
	}
}

func FuzzParseToken(f *testing.F) {
	for _, seed := range []string{"", "AAAAAAAAAAAA", "Az09-_Az09-_", "AAAAAAAAAAé", "a{b}c:d*e?f["} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if err := ParseToken(token); err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("ParseToken(%q) = %v, not ErrInvalidToken", token, err)
			}
			return
		}
		if len(token) != tokenLen {
			t.Fatalf("ParseToken accepted %q of %d bytes", token, len(token))
		}
	})
}
