package intake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// sessionTTL is how long a saved gateway session is offered to the next process. Discord keeps
// a session resumable for minutes, not hours; a later resume would only be refused (op 9) and
// the process identifies afresh.
const sessionTTL = 10 * time.Minute

// Session is a Discord shard's gateway session as a later process needs it to resume. Its JSON
// is what deployed stores hold.
type Session struct {
	ID        string   `json:"id"`
	ResumeURL string   `json:"resume_url"`
	Seq       int64    `json:"seq"`
	BotID     string   `json:"bot_id"`
	AppID     string   `json:"app_id,omitempty"`
	BotRoles  []string `json:"bot_roles,omitempty"`
}

// Sessions keeps a Discord bot's gateway sessions in Redis, Pdiscord:session:<bot id>:<shard>,
// so a restarted process resumes where the stopped one left and Discord replays the messages
// sent in between. A load takes the session (GETDEL): two processes starting together never
// resume the same one. Its methods are safe for concurrent use.
type Sessions struct {
	c      redis.UniversalClient
	prefix string // P discord:session:<bot id>:
}

// NewSessions is the session store of the bot whose token is token under the key prefix on c.
// The token only names the keys, through DiscordBotID; it is not kept.
func NewSessions(c redis.UniversalClient, prefix, token string) Sessions {
	return Sessions{c: c, prefix: prefix + "discord:session:" + DiscordBotID(token) + ":"}
}

// LoadSession takes the shard's saved session: it returns it and deletes it, or returns the
// zero Session when none was saved, it expired, or it does not read (the process then
// identifies afresh).
func (s Sessions) LoadSession(ctx context.Context, shard int) (Session, error) {
	var sess Session
	b, err := s.c.GetDel(ctx, s.prefix+strconv.Itoa(shard)).Bytes()
	if errors.Is(err, redis.Nil) {
		return sess, nil
	}
	if err != nil {
		return sess, fmt.Errorf("discord session: %w", err)
	}
	if err := json.Unmarshal(b, &sess); err != nil {
		return Session{}, nil // unreadable: identify afresh
	}
	return sess, nil
}

// SaveSession keeps the shard's session for the next process, for ten minutes, replacing the
// one saved before.
func (s Sessions) SaveSession(ctx context.Context, shard int, sess Session) error {
	b, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("discord session: %w", err)
	}
	if err := s.c.Set(ctx, s.prefix+strconv.Itoa(shard), b, sessionTTL).Err(); err != nil {
		return fmt.Errorf("discord session: %w", err)
	}
	return nil
}

// DiscordBotID is the public part of a Discord bot token (base64 of the bot's user id), or, for
// a token of another shape, a hash of it — never the secret itself. Keys and lease names use it.
func DiscordBotID(token string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(token, "Bot "), ".")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.StdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(first); err == nil && len(b) > 0 {
			if _, err := strconv.ParseUint(string(b), 10, 64); err == nil {
				return string(b)
			}
		}
	}
	sum := sha256.Sum256([]byte(token))
	return "h" + hex.EncodeToString(sum[:8])
}
