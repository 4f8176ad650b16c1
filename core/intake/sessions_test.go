package intake

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// discordToken is a token of Discord's shape whose public part is the bot id 900000000000000001.
const discordToken = "OTAwMDAwMDAwMDAwMDAwMDAx.fake.SECRET"

// TestSessionsLoadTakesTheSession proves a saved session is stored at
// Pdiscord:session:<bot id>:<shard> for ten minutes in the deployed JSON, comes back whole, and
// is taken by the load (GETDEL): a second load, as by a second process, finds none.
func TestSessionsLoadTakesTheSession(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, s := t.Context(), NewSessions(b.c, b.prefix, discordToken)
		key := b.prefix + "discord:session:900000000000000001:1"
		sess := Session{ID: "s1", ResumeURL: "wss://resume", Seq: 42, BotID: "B", AppID: "A", BotRoles: []string{"r1", "r2"}}
		if err := s.SaveSession(ctx, 1, sess); err != nil {
			t.Fatal(err)
		}
		const want = `{"id":"s1","resume_url":"wss://resume","seq":42,"bot_id":"B","app_id":"A","bot_roles":["r1","r2"]}`
		if got := b.c.Get(ctx, key).Val(); got != want {
			t.Fatalf("%s holds\n %s\nwant %s", key, got, want)
		}
		expiresWithin(t, b.c, key, 9*time.Minute, 10*time.Minute)
		got, err := s.LoadSession(ctx, 1)
		if err != nil || !reflect.DeepEqual(got, sess) {
			t.Fatalf("LoadSession = %+v, %v; want %+v", got, err, sess)
		}
		if got, err := s.LoadSession(ctx, 1); err != nil || !reflect.DeepEqual(got, Session{}) {
			t.Fatalf("a second load = %+v, %v; want none", got, err)
		}
		if got, err := s.LoadSession(ctx, 0); err != nil || !reflect.DeepEqual(got, Session{}) {
			t.Fatalf("another shard = %+v, %v; want none", got, err)
		}
	})
}

// TestSessionsSaveReplaces proves the shard's later save is the one the next process resumes,
// with its ten minutes counted from the later save.
func TestSessionsSaveReplaces(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, s := t.Context(), NewSessions(b.c, b.prefix, discordToken)
		for seq := range int64(3) {
			if err := s.SaveSession(ctx, 0, Session{ID: "s1", Seq: seq}); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.LoadSession(ctx, 0); err != nil || got.Seq != 2 {
			t.Fatalf("LoadSession = %+v, %v; want seq 2", got, err)
		}
	})
}

// TestSessionsExpireAfterTenMinutes proves the TTL: a session nobody took within ten minutes is
// not offered any more (Discord would refuse to resume it). Ten minutes pass only on the
// embedded store's clock, so it runs there; the real servers' TTL is checked by
// TestSessionsLoadTakesTheSession.
func TestSessionsExpireAfterTenMinutes(t *testing.T) {
	b := embedded(t)
	ctx, s := t.Context(), NewSessions(b.c, b.prefix, discordToken)
	if err := s.SaveSession(ctx, 0, Session{ID: "s1", Seq: 7}); err != nil {
		t.Fatal(err)
	}
	b.pass(10*time.Minute - time.Second)
	if got, _ := s.LoadSession(ctx, 0); got.Seq != 7 {
		t.Fatalf("before ten minutes: %+v, want the session", got)
	}
	if err := s.SaveSession(ctx, 0, Session{ID: "s1", Seq: 8}); err != nil {
		t.Fatal(err)
	}
	b.pass(10 * time.Minute)
	if got, err := s.LoadSession(ctx, 0); err != nil || !reflect.DeepEqual(got, Session{}) {
		t.Fatalf("after ten minutes: %+v, %v; want none", got, err)
	}
}

// TestSessionsUnreadableIsAFreshStart proves a stored session that is not one is taken and
// reported as none, so the process identifies afresh instead of failing to start.
func TestSessionsUnreadableIsAFreshStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, s := t.Context(), NewSessions(b.c, b.prefix, discordToken)
		key := b.prefix + "discord:session:900000000000000001:0"
		b.c.Set(ctx, key, "{not json", time.Minute)
		if got, err := s.LoadSession(ctx, 0); err != nil || !reflect.DeepEqual(got, Session{}) {
			t.Fatalf("LoadSession = %+v, %v; want none and no error", got, err)
		}
		if n := pttl(t, b.c, key); n != -2 {
			t.Fatalf("the unreadable session was left behind (PTTL %d)", n)
		}
	})
}

// TestSessionKeysNeverHoldTheToken proves the session keys name the bot by its token's public
// part, or a hash of a token of another shape — never by the token.
func TestSessionKeysNeverHoldTheToken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		for _, token := range []string{discordToken, "not-a-token-SECRET"} {
			if err := NewSessions(b.c, b.prefix, token).SaveSession(ctx, 0, Session{ID: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		var keys []string
		err := redisscan.Each(ctx, b.c, b.prefix+"*", func(k string) error { keys = append(keys, k); return nil })
		if err != nil || len(keys) != 2 {
			t.Fatalf("keys %v, %v; want two", keys, err)
		}
		for _, k := range keys {
			if strings.Contains(k, "SECRET") || strings.Contains(k, "fake") {
				t.Errorf("a session key holds the token: %s", k)
			}
		}
	})
}

func TestDiscordBotIDIsThePublicPartOfTheToken(t *testing.T) {
	cases := []struct{ token, want string }{
		{"OTAwMDAwMDAwMDAwMDAwMDAx.fake.secret", "900000000000000001"},
		{"Bot OTAwMDAwMDAwMDAwMDAwMDAx.x.y", "900000000000000001"},
	}
	for _, tc := range cases {
		if got := DiscordBotID(tc.token); got != tc.want {
			t.Errorf("DiscordBotID(%q) = %q, want %q", tc.token, got, tc.want)
		}
	}
	if got := DiscordBotID("not-a-token-SECRET"); strings.Contains(got, "SECRET") || !strings.HasPrefix(got, "h") || len(got) != 17 {
		t.Errorf("DiscordBotID of an odd token = %q", got)
	}
}
