package intake

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// Installation is one Slack workspace's install of the app (OAuth v2): its bot token and, with
// token rotation on, the refresh token and when the bot token expires. An install with no
// BotToken is an uninstall's mark. Its String and GoString never show a token.
type Installation struct {
	Team, Enterprise string
	BotUserID        string
	BotToken         string
	RefreshToken     string
	// ExpiresAt is when BotToken stops working; zero when it does not expire.
	ExpiresAt time.Time
}

// String shows the install with its tokens redacted: only whether each is set.
func (i Installation) String() string {
	return fmt.Sprintf("intake.Installation{Team:%q Enterprise:%q BotUserID:%q BotToken:%s RefreshToken:%s}",
		i.Team, i.Enterprise, i.BotUserID, redact(i.BotToken), redact(i.RefreshToken))
}

// GoString is redacted like String.
func (i Installation) GoString() string { return i.String() }

func redact(secret string) string {
	if secret == "" {
		return `""`
	}
	return "[redacted]"
}

// Installations keeps the Slack workspaces that installed the app in Redis: one key per team,
// Pslack:install:<team>, holding its install as AES-256-GCM ciphertext (the team id is the
// additional data, so a value moved to another team's key does not decrypt), and one
// short-lived key per used OAuth state, Pslack:oauth-state:<nonce>. The encryption key is
// derived from the run-signing key, which every process sharing the Redis has. No token appears
// in its errors. Its methods are safe for concurrent use.
type Installations struct {
	c      redis.UniversalClient
	prefix string
	aead   cipher.AEAD
}

// NewInstallations is the install store under the key prefix on c, sealing with a key derived
// from signingKey (the newest run-signing key): installs saved under another signing key do not
// read back.
func NewInstallations(c redis.UniversalClient, prefix string, signingKey []byte) (*Installations, error) {
	block, err := aes.NewCipher(derive(signingKey, "switchboard slack tokens v1"))
	if err != nil {
		return nil, fmt.Errorf("slack installs: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("slack installs: %w", err)
	}
	return &Installations{c: c, prefix: prefix, aead: aead}, nil
}

// derive is a 32-byte key for one purpose, from the signing key.
func derive(key []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

func (r *Installations) key(team string) string { return r.prefix + "slack:install:" + team }

// stored is what is sealed; its JSON is what deployed stores hold.
type stored struct {
	Team         string    `json:"team"`
	Enterprise   string    `json:"enterprise,omitempty"`
	BotUserID    string    `json:"bot_user_id,omitempty"`
	BotToken     string    `json:"bot_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
}

// Installation returns the team's install; found is false when it has none. A stored value
// that does not open (another signing key, moved from another team's key) is an error.
func (r *Installations) Installation(ctx context.Context, team string) (Installation, bool, error) {
	b, err := r.c.Get(ctx, r.key(team)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Installation{}, false, nil
	}
	if err != nil {
		return Installation{}, false, fmt.Errorf("slack installs: get %s: %w", team, err)
	}
	n := r.aead.NonceSize()
	if len(b) < n {
		return Installation{}, false, fmt.Errorf("slack installs: %s: stored value too short", team)
	}
	plain, err := r.aead.Open(nil, b[:n], b[n:], []byte(team))
	if err != nil {
		return Installation{}, false, fmt.Errorf("slack installs: %s: stored value does not decrypt (another signing key?)", team)
	}
	var s stored
	if err := json.Unmarshal(plain, &s); err != nil {
		// Not the decoder's error: it could quote the plaintext, tokens and all.
		return Installation{}, false, fmt.Errorf("slack installs: %s: unreadable", team)
	}
	return Installation(s), true, nil
}

// SaveInstallation stores inst sealed, replacing the team's previous install. It has no TTL.
func (r *Installations) SaveInstallation(ctx context.Context, inst Installation) error {
	plain, err := json.Marshal(stored(inst))
	if err != nil {
		return fmt.Errorf("slack installs: save %s: %w", inst.Team, err)
	}
	nonce := make([]byte, r.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("slack installs: save %s: %w", inst.Team, err)
	}
	if err := r.c.Set(ctx, r.key(inst.Team), r.aead.Seal(nonce, nonce, plain, []byte(inst.Team)), 0).Err(); err != nil {
		return fmt.Errorf("slack installs: save %s: %w", inst.Team, err)
	}
	return nil
}

// DeleteInstallation forgets the team's install (uninstall, revoked tokens).
func (r *Installations) DeleteInstallation(ctx context.Context, team string) error {
	if err := r.c.Del(ctx, r.key(team)).Err(); err != nil {
		return fmt.Errorf("slack installs: delete %s: %w", team, err)
	}
	return nil
}

// DeleteEnterprise deletes the org-wide install saved under enterprise and every workspace
// install whose Enterprise is enterprise. The enterprise is inside the ciphertext, so the
// install keys are scanned (on every primary of a cluster) and each candidate read: an
// uninstall is rare, and no index can go stale or miss installs saved before it existed. An
// install that does not decrypt (saved under another signing key) is left alone.
func (r *Installations) DeleteEnterprise(ctx context.Context, enterprise string) error {
	if enterprise == "" {
		return errors.New("slack installs: delete enterprise: no enterprise")
	}
	base := r.key("")
	var teams []string
	err := redisscan.Each(ctx, r.c, globEscaper.Replace(base)+"*", func(key string) error {
		teams = append(teams, strings.TrimPrefix(key, base))
		return nil
	})
	if err != nil {
		return fmt.Errorf("slack installs: delete enterprise %s: %w", enterprise, err)
	}
	var gone []string
	for _, team := range teams {
		if team != enterprise {
			inst, found, err := r.Installation(ctx, team)
			if err != nil || !found || inst.Enterprise != enterprise {
				continue
			}
		}
		gone = append(gone, team)
	}
	// One key per command: in a cluster the keys live in different slots.
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.key(enterprise))
		for _, team := range gone {
			p.Del(ctx, r.key(team))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("slack installs: delete enterprise %s: %w", enterprise, err)
	}
	return nil
}

// globEscaper escapes what SCAN's MATCH would read as a pattern in a key prefix.
var globEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// ClaimState marks an OAuth state nonce used for ttl; claimed is false when it was used before
// and its mark has not expired, so each state installs once.
func (r *Installations) ClaimState(ctx context.Context, nonce string, ttl time.Duration) (bool, error) {
	ok, err := r.c.SetNX(ctx, r.prefix+"slack:oauth-state:"+nonce, "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("slack installs: claim state: %w", err)
	}
	return ok, nil
}
