package main

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
	"time"

	"github.com/redis/go-redis/v9"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
)

// redisInstallations keeps the Slack workspaces that installed the app in Redis: one key per
// team holding its install as AES-256-GCM ciphertext (the team id is the additional data, so a
// value moved to another team's key does not decrypt), and one short-lived key per used OAuth
// state. The encryption key is derived from the run-signing key, which every process sharing the
// Redis has.
type redisInstallations struct {
	c      redis.UniversalClient
	prefix string
	aead   cipher.AEAD
}

var _ slackadapter.Installations = (*redisInstallations)(nil)

func newRedisInstallations(c redis.UniversalClient, prefix string, signingKey []byte) (*redisInstallations, error) {
	block, err := aes.NewCipher(derive(signingKey, "switchboard slack tokens v1"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &redisInstallations{c: c, prefix: prefix, aead: aead}, nil
}

// derive is a 32-byte key for one purpose, from the signing key.
func derive(key []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

func (r *redisInstallations) key(team string) string { return r.prefix + "slack:install:" + team }

// stored is what is encrypted.
type stored struct {
	Team         string    `json:"team"`
	Enterprise   string    `json:"enterprise,omitempty"`
	BotUserID    string    `json:"bot_user_id,omitempty"`
	BotToken     string    `json:"bot_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
}

func (r *redisInstallations) Installation(ctx context.Context, team string) (slackadapter.Installation, bool, error) {
	b, err := r.c.Get(ctx, r.key(team)).Bytes()
	if errors.Is(err, redis.Nil) {
		return slackadapter.Installation{}, false, nil
	}
	if err != nil {
		return slackadapter.Installation{}, false, fmt.Errorf("slack installs: get %s: %w", team, err)
	}
	n := r.aead.NonceSize()
	if len(b) < n {
		return slackadapter.Installation{}, false, fmt.Errorf("slack installs: %s: stored value too short", team)
	}
	plain, err := r.aead.Open(nil, b[:n], b[n:], []byte(team))
	if err != nil {
		return slackadapter.Installation{}, false, fmt.Errorf("slack installs: %s: stored value does not decrypt (another signing key?)", team)
	}
	var s stored
	if err := json.Unmarshal(plain, &s); err != nil {
		return slackadapter.Installation{}, false, fmt.Errorf("slack installs: %s: unreadable", team)
	}
	return slackadapter.Installation{Team: s.Team, Enterprise: s.Enterprise, BotUserID: s.BotUserID,
		BotToken: s.BotToken, RefreshToken: s.RefreshToken, ExpiresAt: s.ExpiresAt}, true, nil
}

func (r *redisInstallations) SaveInstallation(ctx context.Context, inst slackadapter.Installation) error {
	plain, err := json.Marshal(stored{Team: inst.Team, Enterprise: inst.Enterprise, BotUserID: inst.BotUserID,
		BotToken: inst.BotToken, RefreshToken: inst.RefreshToken, ExpiresAt: inst.ExpiresAt})
	if err != nil {
		return err
	}
	nonce := make([]byte, r.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	if err := r.c.Set(ctx, r.key(inst.Team), r.aead.Seal(nonce, nonce, plain, []byte(inst.Team)), 0).Err(); err != nil {
		return fmt.Errorf("slack installs: save %s: %w", inst.Team, err)
	}
	return nil
}

func (r *redisInstallations) DeleteInstallation(ctx context.Context, team string) error {
	if err := r.c.Del(ctx, r.key(team)).Err(); err != nil {
		return fmt.Errorf("slack installs: delete %s: %w", team, err)
	}
	return nil
}

func (r *redisInstallations) ClaimState(ctx context.Context, nonce string, ttl time.Duration) (bool, error) {
	ok, err := r.c.SetNX(ctx, r.prefix+"slack:oauth-state:"+nonce, "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("slack installs: claim state: %w", err)
	}
	return ok, nil
}
