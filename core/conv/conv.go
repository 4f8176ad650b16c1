// Package conv is the vocabulary adapters fill in and the core keys its state by: which
// conversation a message belongs to (Key), who sent it (Identity) and the files that came with it
// (Attachment). It imports only the standard library, so an adapter can name a conversation
// without being able to reach the queue, the thread store or Redis.
package conv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Key identifies one conversation: a platform, a workspace (Slack team, Discord guild; empty
// for Telegram), a chat (channel, DM, group) and a thread or topic inside it (may be empty).
// Two messages belong to the same conversation exactly when their Keys are equal.
type Key struct {
	Platform  string `json:"platform"`
	Workspace string `json:"workspace,omitempty"`
	Chat      string `json:"chat"`
	Thread    string `json:"thread,omitempty"`
}

// String is the conversation's stable identity: the four parts joined by ':' with '%' and ':'
// inside a part percent-escaped, so distinct keys never produce the same string. It never changes
// between releases; stores key conversations by it.
func (k Key) String() string {
	return escapePart(k.Platform) + ":" + escapePart(k.Workspace) + ":" + escapePart(k.Chat) + ":" + escapePart(k.Thread)
}

// ParseKey inverts String. It reports false when s is not a string String produced.
func ParseKey(s string) (Key, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return Key{}, false
	}
	var out [4]string
	for i, p := range parts {
		u, ok := unescapePart(p)
		if !ok {
			return Key{}, false
		}
		out[i] = u
	}
	return Key{Platform: out[0], Workspace: out[1], Chat: out[2], Thread: out[3]}, true
}

// HashTag is the Redis Cluster hash tag of the conversation, "{conv:<32 hex>}": every key of one
// conversation carries it so the scripts that touch them together run on one cluster slot.
func (k Key) HashTag() string {
	sum := sha256.Sum256([]byte(k.String()))
	return "{conv:" + hex.EncodeToString(sum[:16]) + "}"
}

// IsZero reports whether the key names no conversation (no platform and no chat).
func (k Key) IsZero() bool { return k.Platform == "" && k.Chat == "" }

func escapePart(s string) string {
	if !strings.ContainsAny(s, "%:") {
		return s
	}
	return strings.NewReplacer("%", "%25", ":", "%3A").Replace(s)
}

func unescapePart(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		switch s[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "3A":
			b.WriteByte(':')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// Identity is who sent a message, as the adapter derived it from the platform event. Only the
// copy inside a verified Envelope is trusted; Admin was decided by the router from configuration.
type Identity struct {
	Platform      string `json:"platform"`
	ChannelUserID string `json:"channel_user_id"`
	DisplayName   string `json:"display_name,omitempty"`
	Admin         bool   `json:"admin,omitempty"`
}

// Attachment is the metadata of a file that came with a message; the bytes stay on the platform
// and are fetched from URL when needed.
type Attachment struct {
	Name string `json:"name"`
	MIME string `json:"mime,omitempty"`
	Size int64  `json:"size,omitempty"`
	URL  string `json:"url,omitempty"`
}

// ErrFileTooLarge is the error of a file download refused for its size: the platform said it
// is larger than the limit, or more bytes than that came.
var ErrFileTooLarge = errors.New("the file is larger than the limit")
