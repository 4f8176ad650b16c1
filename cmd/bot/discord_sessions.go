package main

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

	"github.com/switchboard-bot/switchboard/adapters/discord"
)

// discordSessionTTL is how long a saved gateway session is offered to the next process. Discord
// keeps a session resumable for minutes, not hours; a later resume would only be refused (op 9)
// and the process identifies afresh.
const discordSessionTTL = 10 * time.Minute

// redisSessions keeps the Discord adapter's gateway sessions in Redis
// (P discord:session:<bot id>:<shard>), so a restarted process resumes where the stopped one
// left and Discord replays the messages sent in between. A load takes the session (GETDEL):
// two processes starting together never resume the same one.
type redisSessions struct {
	c      redis.UniversalClient
	prefix string // P discord:session:<bot id>:
}

func newRedisSessions(c redis.UniversalClient, redisPrefix, token string) redisSessions {
	return redisSessions{c: c, prefix: redisPrefix + "discord:session:" + discordBotID(token) + ":"}
}

func (s redisSessions) LoadSession(ctx context.Context, shard int) (discord.Session, error) {
	var sess discord.Session
	b, err := s.c.GetDel(ctx, s.prefix+strconv.Itoa(shard)).Bytes()
	if errors.Is(err, redis.Nil) {
		return sess, nil
	}
	if err != nil {
		return sess, fmt.Errorf("discord session: %w", err)
	}
	if err := json.Unmarshal(b, &sess); err != nil {
		return discord.Session{}, nil // unreadable: identify afresh
	}
	return sess, nil
}

func (s redisSessions) SaveSession(ctx context.Context, shard int, sess discord.Session) error {
	b, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("discord session: %w", err)
	}
	if err := s.c.Set(ctx, s.prefix+strconv.Itoa(shard), b, discordSessionTTL).Err(); err != nil {
		return fmt.Errorf("discord session: %w", err)
	}
	return nil
}

// discordBotID is the public part of a Discord bot token (base64 of the bot's user id), or,
// for a token of another shape, a hash of it — never the secret itself.
func discordBotID(token string) string {
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
