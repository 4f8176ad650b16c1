package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testSigningKey and otherSigningKey are run-signing keys (32 bytes).
const (
	testSigningKey  = "e2e-signing-key-0123456789abcdef"
	otherSigningKey = "another-signing-key-0123456789ab"
)

// newTestInstallations is an install store on b under its prefix, sealing with signingKey.
func newTestInstallations(t testing.TB, b backend, signingKey string) *Installations {
	t.Helper()
	store, err := NewInstallations(b.c, b.prefix, []byte(signingKey))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestInstallationsRoundTrip proves an install saved at Pslack:install:<team> (with no TTL) reads
// back whole, and that deleting it forgets it.
func TestInstallationsRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		inst := Installation{Team: "T1", Enterprise: "E1", BotUserID: "UB", BotToken: "xoxb-secret-1", RefreshToken: "xoxe-r",
			ExpiresAt: time.Now().Add(time.Hour).Truncate(time.Second)}
		if err := store.SaveInstallation(ctx, inst); err != nil {
			t.Fatal(err)
		}
		got, found, err := store.Installation(ctx, "T1")
		if err != nil || !found || got.Team != inst.Team || got.Enterprise != inst.Enterprise || got.BotUserID != inst.BotUserID ||
			got.BotToken != inst.BotToken || got.RefreshToken != inst.RefreshToken || !got.ExpiresAt.Equal(inst.ExpiresAt) {
			t.Fatalf("round trip: %v %v %v", got, found, err)
		}
		if n := pttl(t, b.c, b.prefix+"slack:install:T1"); n != -1 {
			t.Fatalf("the install expires (PTTL %d), want no TTL", n)
		}
		if err := store.DeleteInstallation(ctx, "T1"); err != nil {
			t.Fatal(err)
		}
		if _, found, err := store.Installation(ctx, "T1"); found || err != nil {
			t.Fatalf("after delete: found %v, %v", found, err)
		}
		if _, found, err := store.Installation(ctx, "T9"); found || err != nil {
			t.Fatalf("a team never installed: found %v, %v", found, err)
		}
	})
}

// TestInstallationsSealTheDeployedFormat proves the stored value is what deployed stores hold: a
// 12-byte nonce, then AES-256-GCM under HMAC-SHA256(signing key, "switchboard slack tokens v1")
// of the install's JSON with the team as additional data — and no token in the clear.
func TestInstallationsSealTheDeployedFormat(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		inst := Installation{Team: "T1", BotUserID: "UB", BotToken: "xoxb-SECRET-1", RefreshToken: "xoxe-SECRET-2",
			ExpiresAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
		if err := store.SaveInstallation(ctx, inst); err != nil {
			t.Fatal(err)
		}
		raw, err := b.c.Get(ctx, b.prefix+"slack:install:T1").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("SECRET")) {
			t.Fatal("a token is stored in the clear")
		}
		plain, err := store.aead.Open(nil, raw[:12], raw[12:], []byte("T1"))
		if err != nil {
			t.Fatalf("the value does not open as nonce ‖ GCM(team): %v", err)
		}
		const want = `{"team":"T1","bot_user_id":"UB","bot_token":"xoxb-SECRET-1","refresh_token":"xoxe-SECRET-2","expires_at":"2030-01-02T03:04:05Z"}`
		if string(plain) != want {
			t.Fatalf("sealed JSON\n got %s\nwant %s", plain, want)
		}
	})
}

// TestInstallationsRefuseWhatTheyDidNotSeal proves a stored value opens only under its own team
// and signing key: moved to another team's key, read with another signing key, truncated or
// tampered with, it is an error — and no error shows a token.
func TestInstallationsRefuseWhatTheyDidNotSeal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		if err := store.SaveInstallation(ctx, Installation{Team: "T1", BotToken: "xoxb-SECRET-1"}); err != nil {
			t.Fatal(err)
		}
		raw, _ := b.c.Get(ctx, b.prefix+"slack:install:T1").Bytes()
		tampered := bytes.Clone(raw)
		tampered[len(tampered)-1] ^= 1
		// Sealed as the store seals, under the right team and key, but not an install's JSON.
		nonce := make([]byte, 12)
		unreadable := store.aead.Seal(nonce, nonce, []byte(`{"bot_token":"xoxb-SECRET-3"`), []byte("T5"))
		for team, value := range map[string][]byte{"T2": raw, "T3": raw[:5], "T4": tampered, "T5": unreadable} {
			b.c.Set(ctx, b.prefix+"slack:install:"+team, value, 0)
		}
		other := newTestInstallations(t, b, otherSigningKey)
		for _, c := range []struct {
			name  string
			store *Installations
			team  string
		}{
			{"moved to another team's key", store, "T2"},
			{"too short", store, "T3"},
			{"tampered with", store, "T4"},
			{"not an install", store, "T5"},
			{"another signing key", other, "T1"},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, found, err := c.store.Installation(ctx, c.team)
				if err == nil || found {
					t.Fatalf("found %v, err %v; want an error", found, err)
				}
				if !strings.Contains(err.Error(), c.team) || strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("err = %v, want one naming the team and no token", err)
				}
			})
		}
	})
}

// TestInstallationNeverPrintsAToken proves an Installation formatted in any way a log line or an
// error might (%v, %+v, %#v, %s) shows no token, and shows whether one is set.
func TestInstallationNeverPrintsAToken(t *testing.T) {
	inst := Installation{Team: "T1", Enterprise: "E1", BotUserID: "UB", BotToken: "xoxb-SECRET-1", RefreshToken: "xoxe-SECRET-2"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{inst, &inst, []Installation{inst}} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, "SECRET") || !strings.Contains(s, "T1") {
				t.Errorf("%s of %T = %s", verb, v, s)
			}
		}
	}
	if s := fmt.Sprint(Installation{Team: "T1"}); !strings.Contains(s, `BotToken:""`) {
		t.Errorf("an uninstall mark prints as %s, want it to show no token", s)
	}
	if b, _ := json.Marshal(stored(inst)); !bytes.Contains(b, []byte("xoxb-SECRET-1")) {
		t.Error("the sealed JSON lost the token") // the redaction is for printing only
	}
}

// TestInstallationsDeleteAnEnterprise proves DeleteEnterprise (scanning every master of a
// cluster): the org-wide install saved under the enterprise and every workspace install of that
// enterprise are deleted; installs of other workspaces and of another enterprise are kept, and so
// is an install of the enterprise the store cannot read (saved under another signing key).
func TestInstallationsDeleteAnEnterprise(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		for _, inst := range []Installation{
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
		other := newTestInstallations(t, b, otherSigningKey)
		if err := other.SaveInstallation(ctx, Installation{Team: "T5", Enterprise: "E1", BotToken: "xoxb-unreadable"}); err != nil {
			t.Fatal(err)
		}
		if err := store.DeleteEnterprise(ctx, "E1"); err != nil {
			t.Fatal(err)
		}
		for team, want := range map[string]bool{"E1": false, "T1": false, "T2": false, "T3": true, "T4": true, "T5": true} {
			n, err := b.c.Exists(ctx, b.prefix+"slack:install:"+team).Result()
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
	})
}

// TestInstallationsDeleteAnEnterpriseUnderAGlobPrefix proves the scan matches the prefix
// literally: a prefix with glob characters deletes its own installs, not another prefix's.
func TestInstallationsDeleteAnEnterpriseUnderAGlobPrefix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		globbed, err := NewInstallations(b.c, b.prefix+"t?[*]:", []byte(testSigningKey))
		if err != nil {
			t.Fatal(err)
		}
		lookalike, err := NewInstallations(b.c, b.prefix+"tx[a]:", []byte(testSigningKey))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Installations{globbed, lookalike} {
			if err := s.SaveInstallation(ctx, Installation{Team: "T1", Enterprise: "E1", BotToken: "xoxb-1"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := globbed.DeleteEnterprise(ctx, "E1"); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := globbed.Installation(ctx, "T1"); found {
			t.Error("the enterprise's install under the glob prefix was kept")
		}
		if _, found, _ := lookalike.Installation(ctx, "T1"); !found {
			t.Error("an install under a prefix the glob would match was deleted")
		}
	})
}

// TestInstallationsKeepAnUninstallMark proves the store keeps what the Slack adapter saves when
// the configured bot token's workspace uninstalls the app — an install with no token — and reads
// it back as found with no token (the mark every process honours), and that an install saved
// after it replaces it.
func TestInstallationsKeepAnUninstallMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		if err := store.SaveInstallation(ctx, Installation{Team: "T1"}); err != nil {
			t.Fatal(err)
		}
		if got, found, err := store.Installation(ctx, "T1"); err != nil || !found || got.BotToken != "" || got.Team != "T1" {
			t.Fatalf("the mark read back as %v, found %v, %v; want found, no token", got, found, err)
		}
		if err := store.SaveInstallation(ctx, Installation{Team: "T1", BotToken: "xoxb-again"}); err != nil {
			t.Fatal(err)
		}
		if got, found, err := store.Installation(ctx, "T1"); err != nil || !found || got.BotToken != "xoxb-again" {
			t.Fatalf("after a reinstall: %v, found %v, %v", got, found, err)
		}
	})
}

// TestClaimStateOnceUntilItsMarkExpires proves ClaimState: the first claim of a nonce marks
// Pslack:oauth-state:<nonce> for the TTL given; a second claim is refused while the mark lasts;
// another nonce is claimed independently; once the mark expired the nonce can be claimed again.
func TestClaimStateOnceUntilItsMarkExpires(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, store := t.Context(), newTestInstallations(t, b, testSigningKey)
		key := b.prefix + "slack:oauth-state:nonce-1"
		for i, want := range []bool{true, false} {
			if ok, err := store.ClaimState(ctx, "nonce-1", 10*time.Second); ok != want || err != nil {
				t.Fatalf("claim %d: %v %v, want %v", i, ok, err, want)
			}
		}
		expiresWithin(t, b.c, key, 9*time.Second, 10*time.Second)
		if ok, err := store.ClaimState(ctx, "nonce-2", 50*time.Millisecond); !ok || err != nil {
			t.Fatalf("another nonce: %v %v, want claimed", ok, err)
		}
		waitGone(t, b, b.prefix+"slack:oauth-state:nonce-2", 100*time.Millisecond)
		if ok, err := store.ClaimState(ctx, "nonce-2", time.Minute); !ok || err != nil {
			t.Fatalf("after its mark expired: %v %v, want claimed", ok, err)
		}
	})
}
