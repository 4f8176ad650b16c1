package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
)

// TestRedisInstallations proves the install store on the real Redis: an install round-trips,
// its stored value is ciphertext bound to its team (moved to another team's key it does not
// decrypt), another signing key cannot read it, deletion forgets it, and a state is claimed once.
func TestRedisInstallations(t *testing.T) {
	prefix := uniquePrefix()
	t.Cleanup(func() { cleanRedis(t, prefix) })
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	ctx := context.Background()
	store, err := newRedisInstallations(rc, prefix, []byte(testSigningKey))
	if err != nil {
		t.Fatal(err)
	}
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
