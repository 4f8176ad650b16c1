package config

import (
	"sort"
	"strings"
)

// discordPermissions are the guild permissions discord.admin_permission may name: Discord's
// staff permissions (its documented bit offsets), the ones a server gives only to the people
// who run it. Everyday permissions (SEND_MESSAGES, VIEW_CHANNEL…) are left out on purpose:
// every member holds them, so naming one would make everyone an admin.
var discordPermissions = map[string]uint64{
	"KICK_MEMBERS":             1 << 1,
	"BAN_MEMBERS":              1 << 2,
	"ADMINISTRATOR":            1 << 3,
	"MANAGE_CHANNELS":          1 << 4,
	"MANAGE_GUILD":             1 << 5,
	"VIEW_AUDIT_LOG":           1 << 7,
	"MANAGE_MESSAGES":          1 << 13,
	"MENTION_EVERYONE":         1 << 17,
	"VIEW_GUILD_INSIGHTS":      1 << 19,
	"MANAGE_NICKNAMES":         1 << 27,
	"MANAGE_ROLES":             1 << 28,
	"MANAGE_WEBHOOKS":          1 << 29,
	"MANAGE_GUILD_EXPRESSIONS": 1 << 30,
	"MANAGE_EVENTS":            1 << 33,
	"MANAGE_THREADS":           1 << 34,
	"MODERATE_MEMBERS":         1 << 40,
}

// DiscordPermission is the permission bit discord.admin_permission names (case-insensitive,
// e.g. "MANAGE_GUILD" → 1<<5); ok is false for a name not in the table, and for "" (off).
func DiscordPermission(name string) (bit uint64, ok bool) {
	bit, ok = discordPermissions[strings.ToUpper(strings.TrimSpace(name))]
	return bit, ok
}

// DiscordPermissionNames lists the names discord.admin_permission accepts, sorted.
func DiscordPermissionNames() []string {
	out := make([]string, 0, len(discordPermissions))
	for n := range discordPermissions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
