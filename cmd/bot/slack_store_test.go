package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
)

// newTestInstallStore is an install store on the real Redis under a fresh prefix, removed when
// the test ends, with the client it uses and the prefix.
func newTestInstallStore(t *testing.T) (*redisInstallations, *redis.Client, string) {
	t.Helper()
	prefix := uniquePrefix()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { cleanRedis(t, prefix); rc.Close() })
	store, err := newRedisInstallations(rc, prefix, []byte(testSigningKey))
	if err != nil {
		t.Fatal(err)
	}
	return store, rc, prefix
}

// TestRedisInstallations proves the install store on the real Redis: an install round-trips,
// its stored value is ciphertext bound to its team (moved to another team's key it does not
// decrypt), another signing key cannot read it, deletion forgets it, and a state is claimed once.
func TestRedisInstallations(t *testing.T) {
	store, rc, prefix := newTestInstallStore(t)
	ctx := context.Background()
	inst := slackadapter.Installation{Team: "T1", BotUserID: "UB", BotToken: "xoxb-secret-1", RefreshToken: "xoxe-r",
		ExpiresAt: time.Now().Add(time.Hour).Truncate(time.Second)}
	if err := store.SaveInstallation(ctx, inst); err != nil {
		t.Fatal(err)
	}
	got, found, err := store.Installation(ctx, "T1")
	if err != nil || !found || got.BotToken != inst.BotToken || got.RefreshToken != inst.RefreshToken || !got.ExpiresAt.Equal(inst.ExpiresAt) {
		t.Fatalf("round trip: %v %v %v", got, found, err)
	}
	raw, _ := rc.Get(ctx, prefix+"slack:install:T1").Bytes()
	rc.Set(ctx, prefix+"slack:install:T2", raw, 0)
	if _, _, err := store.Installation(ctx, "T2"); err == nil {
		t.Error("a value moved to another team's key decrypted")
	}
	other, _ := newRedisInstallations(rc, prefix, []byte("another-signing-key-0123456789ab"))
	if _, _, err := other.Installation(ctx, "T1"); err == nil {
		t.Error("another signing key read the install")
	}
	if err := store.DeleteInstallation(ctx, "T1"); err != nil {
		t.Fatal(err)
	}
	if _, found, err := store.Installation(ctx, "T1"); found || err != nil {
		t.Fatalf("after delete: found %v, %v", found, err)
	}
	for i, want := range []bool{true, false} {
		if ok, err := store.ClaimState(ctx, "nonce-1", time.Minute); ok != want || err != nil {
			t.Fatalf("claim %d: %v %v, want %v", i, ok, err, want)
		}
	}
}

// TestSlackInstallStoreDeletesAnEnterprise proves DeleteEnterprise on the real Redis: the
// org-wide install saved under the enterprise and every workspace install of that enterprise
// are deleted; installs of other workspaces and of another enterprise are kept, and so is an
// install of the enterprise the store cannot read (saved under another signing key).
func TestSlackInstallStoreDeletesAnEnterprise(t *testing.T) {
	store, rc, prefix := newTestInstallStore(t)
	ctx := context.Background()
	other, _ := newRedisInstallations(rc, prefix, []byte("another-signing-key-0123456789ab"))
	for _, inst := range []slackadapter.Installation{
		{Team: "E1", Enterprise: "E1", BotToken: "xoxb-org"},
		{Team: "T1", Enterprise: "E1", BotToken: "xoxb-grid-1"},
		{Team: "T2", Enterprise: "E1", BotToken: "xoxb-grid-2"},
		{Team: "T3", BotToken: "xoxb-alone"},
		{Team: "T4", Enterprise: "E2", BotToken: "xoxb-other-org"},
	} {
		if err := store.SaveInstallation(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.SaveInstallation(ctx, slackadapter.Installation{Team: "T5", Enterprise: "E1", BotToken: "xoxb-unreadable"}); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteEnterprise(ctx, "E1"); err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]bool{"E1": false, "T1": false, "T2": false, "T3": true, "T4": true, "T5": true} {
		n, err := rc.Exists(ctx, prefix+"slack:install:"+team).Result()
		if err != nil || (n == 1) != want {
			t.Errorf("%s stored: %v (%v), want %v", team, n == 1, err, want)
		}
	}
	if err := store.DeleteEnterprise(ctx, "E1"); err != nil {
		t.Errorf("deleting an enterprise again: %v", err)
	}
	if err := store.DeleteEnterprise(ctx, ""); err == nil {
		t.Error("an empty enterprise was accepted")
	}
}

// TestSlackInstallStoreKeepsAnUninstallMark proves the real store keeps what the Slack adapter
// saves when the configured bot token's workspace uninstalls the app — an install with no
// token — and reads it back as found with no token (the mark every process honours), and that
// an install saved after it replaces it.
func TestSlackInstallStoreKeepsAnUninstallMark(t *testing.T) {
	store, _, _ := newTestInstallStore(t)
	ctx := context.Background()
	if err := store.SaveInstallation(ctx, slackadapter.Installation{Team: "T1"}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := store.Installation(ctx, "T1"); err != nil || !found || got.BotToken != "" || got.Team != "T1" {
		t.Fatalf("the mark read back as %v, found %v, %v; want found, no token", got, found, err)
	}
	if err := store.SaveInstallation(ctx, slackadapter.Installation{Team: "T1", BotToken: "xoxb-again"}); err != nil {
		t.Fatal(err)
	}
	if got, found, err := store.Installation(ctx, "T1"); err != nil || !found || got.BotToken != "xoxb-again" {
		t.Fatalf("after a reinstall: %v, found %v, %v", got, found, err)
	}
}
