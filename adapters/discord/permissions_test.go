package discord

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestParsePermissions(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"32", 1 << 5, true},
		{"1071698660929", 1071698660929, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"00032", 32, true},
		{"", 0, false},
		{"-1", 0, false},
		{"-32", 0, false},
		{"+32", 0, false},
		{" 32", 0, false},
		{"32 ", 0, false},
		{"0x20", 0, false},
		{"3.2e1", 0, false},
		{"MANAGE_GUILD", 0, false},
		{"١٢", 0, false}, // Arabic-Indic digits are not ASCII digits
		{"18446744073709551616", 0, false},
		{"999999999999999999999999999999", 0, false},
		{"1_000", 0, false},
	}
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			got, err := parsePermissions(tc.in)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("parsePermissions(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
			if err != nil && !errors.Is(err, errMalformed) {
				t.Errorf("error %v does not wrap errMalformed", err)
			}
		})
	}
}

func FuzzParsePermissions(f *testing.F) {
	for _, s := range []string{"0", "32", "-1", "18446744073709551616", "abc", "", "1071698660929"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parsePermissions(s)
		if err != nil {
			return
		}
		if strconv.FormatUint(v, 10) != trimZeros(s) {
			t.Fatalf("parsePermissions(%q) = %d", s, v)
		}
	})
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// TestAdminPermissionFromInteractionMember: a guild interaction from a member whose permissions
// hold the configured one (or ADMINISTRATOR) is marked PlatformAdmin; malformed permissions, a
// DM, an unset AdminPermission and a member without it are not.
func TestAdminPermissionFromInteractionMember(t *testing.T) {
	const manageGuild = 1 << 5
	slash := func(guild, member string) string {
		if guild == "" {
			return `{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"name":"botadmin","options":[{"name":"stats","type":1}]}}`
		}
		return `{"id":"1","type":2,"token":"t","channel_id":"2","guild_id":"` + guild + `","member":{"user":{"id":"4"}` + member +
			`},"data":{"name":"botadmin","options":[{"name":"stats","type":1}]}}`
	}
	cases := []struct {
		name  string
		data  string
		perm  uint64
		admin bool
	}{
		{"holds MANAGE_GUILD", slash("3", `,"permissions":"32"`), manageGuild, true},
		{"holds it among others", slash("3", `,"permissions":"1071698660961"`), manageGuild, true},
		{"administrator holds everything", slash("3", `,"permissions":"8"`), manageGuild, true},
		{"lacks it", slash("3", `,"permissions":"1024"`), manageGuild, false},
		{"negative is malformed, not every bit", slash("3", `,"permissions":"-1"`), manageGuild, false},
		{"no permissions", slash("3", ``), manageGuild, false},
		{"feature off", slash("3", `,"permissions":"8"`), 0, false},
		{"a DM has no member", slash("", ""), manageGuild, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := decodeInteraction([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			in, ok := interactionInbound(ix, where{Guild: ix.GuildID}, time.Unix(0, 0), tc.perm)
			if !ok || in.Command != "stats" {
				t.Fatalf("inbound %+v, %v", in, ok)
			}
			if in.PlatformAdmin != tc.admin || in.Identity.Admin {
				t.Errorf("PlatformAdmin = %v (Identity.Admin %v), want %v", in.PlatformAdmin, in.Identity.Admin, tc.admin)
			}
		})
	}
	// Malformed permissions discordgo cannot read make the event malformed, never an admin.
	for _, p := range []string{`"abc"`, `"99999999999999999999999"`, `32`} {
		if _, err := decodeInteraction([]byte(slash("3", `,"permissions":`+p))); !errors.Is(err, errMalformed) {
			t.Errorf("permissions %s: err = %v", p, err)
		}
	}
}
