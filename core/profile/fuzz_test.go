package profile_test

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/profile"
)

// FuzzParseFacts: whatever an operator types, ParseFacts does not panic, returns facts with a
// known platform and a chat or an error, and the key it returns prints back to what was typed.
//
//	go test ./core/profile -run '^$' -fuzz FuzzParseFacts -fuzztime 30s
func FuzzParseFacts(f *testing.F) {
	for _, seed := range []string{
		"slack:T0123:C0456:", "slack:E1/T2:C1:1.2 dm user=E1:U1", "telegram::-100: dm", "console::local:",
		"", "dm", "slack:T:C", "slack:%3A:%25:%", "discord:1:2: user= dm dm", "slack:T1:C1:\tuser=x\ndm",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		facts, err := profile.ParseFacts(s)
		if err != nil {
			if facts != (profile.Facts{}) {
				t.Fatalf("ParseFacts(%q) failed but returned %+v", s, facts)
			}
			return
		}
		if facts.Key.Chat == "" || facts.Key.Platform == "" {
			t.Fatalf("ParseFacts(%q) = %+v: no platform or chat", s, facts)
		}
		if got := strings.Fields(s)[0]; facts.Key.String() != got {
			t.Fatalf("ParseFacts(%q): key prints as %q, typed %q", s, facts.Key.String(), got)
		}
	})
}

// FuzzResolve: whatever the routes select and whatever a run says of itself, Resolve does not
// panic, returns the profile of the route it names (or the default for -1), and that route
// holds: resolving the same facts against that route alone matches it.
//
//	go test ./core/profile -run '^$' -fuzz FuzzResolve -fuzztime 30s
func FuzzResolve(f *testing.F) {
	f.Add("slack", "T1", "E1", "", "C1", "U1", uint8(1), "slack", "E1/T1", "C1", "t", "U1", true)
	f.Add("discord", "", "", "42", "", "", uint8(0), "discord", "42", "7", "", "", false)
	f.Add("", "", "", "", "", "", uint8(2), "console", "", "local", "", "", false)
	f.Add("slack", "T1", "", "", "", "", uint8(0), "slack", "E1", "C", "", "", false)
	f.Fuzz(func(t *testing.T, platform, team, enterprise, guild, channel, user string, dm uint8,
		kPlatform, kWorkspace, kChat, kThread, fUser string, direct bool) {
		m := profile.Match{Platform: platform, Team: team, Enterprise: enterprise, Guild: guild, Channel: channel, User: user}
		switch dm % 3 {
		case 1:
			b := true
			m.DM = &b
		case 2:
			b := false
			m.DM = &b
		}
		routes := []profile.Route{
			{Match: m, Profile: "fuzzed"},
			{Match: profile.Match{Platform: kPlatform, Channel: kChat}, Profile: "second"},
		}
		s, err := profile.New(profile.Profile{Model: "m"},
			map[string]profile.Partial{"fuzzed": {Model: "f"}, "second": {Model: "s"}}, routes)
		if err != nil {
			t.Fatal(err)
		}
		facts := profile.Facts{Key: conv.Key{Platform: kPlatform, Workspace: kWorkspace, Chat: kChat, Thread: kThread},
			Direct: direct, User: fUser}
		r := s.Resolve(facts)
		if r.Why == "" {
			t.Fatal("no Why")
		}
		switch r.Route {
		case 0:
			if r.Profile.Name != "fuzzed" || r.Profile.Model != "f" {
				t.Fatalf("route 0 gave %+v", r.Profile)
			}
		case 1:
			// The second route always matches its own facts, so route 0 must have missed.
			if r.Profile.Name != "second" {
				t.Fatalf("route 1 gave %+v", r.Profile)
			}
			only, _ := profile.New(profile.Profile{}, map[string]profile.Partial{"fuzzed": {}}, routes[:1])
			if only.Resolve(facts).Route != -1 {
				t.Fatalf("route 0 matches alone but not first: %+v %+v", m, facts)
			}
		default:
			t.Fatalf("route %d: the second route always matches these facts (%s)", r.Route, r.Why)
		}
	})
}
