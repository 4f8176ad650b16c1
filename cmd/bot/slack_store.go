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
	"strings"
	"sync"
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

// DeleteEnterprise deletes the org-wide install saved under enterprise and every workspace
// install whose Enterprise is enterprise. The enterprise is inside the ciphertext, so the
// install keys are scanned (on every primary of a cluster) and each candidate read: an
// uninstall is rare, and no index can go stale or miss installs saved before it existed. An
// install that does not decrypt (saved under another signing key) is left alone.
func (r *redisInstallations) DeleteEnterprise(ctx context.Context, enterprise string) error {
	if enterprise == "" {
		return errors.New("slack installs: delete enterprise: no enterprise")
	}
	teams, err := r.teams(ctx)
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

// teams lists the teams with a stored install.
func (r *redisInstallations) teams(ctx context.Context) ([]string, error) {
	base := r.key("")
	pattern := globEscaper.Replace(base) + "*"
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 512).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, strings.TrimPrefix(it.Val(), base))
			mu.Unlock()
		}
		return it.Err()
	}
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
		return out, err
	}
	return out, scan(ctx, r.c)
}

// globEscaper escapes what SCAN's MATCH would read as a pattern in a key prefix.
var globEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

func (r *redisInstallations) ClaimState(ctx context.Context, nonce string, ttl time.Duration) (bool, error) {
	ok, err := r.c.SetNX(ctx, r.prefix+"slack:oauth-state:"+nonce, "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("slack installs: claim state: %w", err)
	}
	return ok, nil
}
