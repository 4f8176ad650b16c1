package profile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// platforms are the platform names a conversation key may start with.
var platforms = []string{"telegram", platformSlack, platformDiscord, "console"}

// ParseFacts reads the facts of a run as an operator types them for `bot check-config --route`:
// a conversation key as conv.Key.String prints it ("slack:T0123:C0456:", four parts, the thread
// possibly empty), then, space-separated, the optional flags "dm" (a private chat with the bot)
// and "user=<channel_user_id>". Its errors say what is malformed and how to write it.
func ParseFacts(s string) (Facts, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Facts{}, errors.New(`profile: no conversation key: give one like "slack:T0123:C0456:" (platform:workspace:chat:thread), then dm and user=<id> if they apply`)
	}
	var f Facts
	key, ok := conv.ParseKey(fields[0])
	if !ok {
		return Facts{}, fmt.Errorf("profile: %q is not a conversation key: write platform:workspace:chat:thread, "+
			"four parts even when empty (\"telegram::12345:\", \"slack:T0123:C0456:\"), ':' and '%%' inside a part as %%3A and %%25", fields[0])
	}
	if !slices.Contains(platforms, key.Platform) {
		return Facts{}, fmt.Errorf("profile: conversation key %q: the platform must be one of %s, got %q",
			fields[0], strings.Join(platforms, ", "), key.Platform)
	}
	if key.Chat == "" {
		return Facts{}, fmt.Errorf("profile: conversation key %q names no chat (the third part)", fields[0])
	}
	f.Key = key
	var sawDM, sawUser bool
	for _, flag := range fields[1:] {
		switch name, val, hasVal := strings.Cut(flag, "="); {
		case flag == "dm":
			if sawDM {
				return Facts{}, errors.New("profile: dm is given twice")
			}
			sawDM, f.Direct = true, true
		case name == "user" && hasVal:
			if sawUser {
				return Facts{}, errors.New("profile: user= is given twice")
			}
			if val == "" {
				return Facts{}, errors.New("profile: user= needs the sender's channel_user_id, like user=U0456")
			}
			sawUser, f.User = true, val
		default:
			return Facts{}, fmt.Errorf("profile: unknown flag %q after the conversation key: only dm and user=<id> are known", flag)
		}
	}
	return f, nil
}
