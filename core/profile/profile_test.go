package profile_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/profile"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// def is the default profile the tests resolve against.
func def() profile.Profile {
	return profile.Profile{
		Name: "ignored", SystemPrompt: "", Model: "deepseek-chat", HistoryTurns: 50,
		Subagents: profile.Subagents{MaxDepth: 2, MaxConcurrent: 4},
	}
}

func mustNew(t *testing.T, profiles map[string]profile.Partial, routes []profile.Route) *profile.Set {
	t.Helper()
	s, err := profile.New(def(), profiles, routes)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func slack(workspace, chat string) conv.Key {
	return conv.Key{Platform: "slack", Workspace: workspace, Chat: chat}
}

// TestResolveEverySelector: each selector alone selects exactly the runs it names.
func TestResolveEverySelector(t *testing.T) {
	tests := []struct {
		name  string
		match profile.Match
		hit   []profile.Facts
		miss  []profile.Facts
	}{
		{"platform", profile.Match{Platform: "telegram"},
			[]profile.Facts{{Key: conv.Key{Platform: "telegram", Chat: "1"}}},
			[]profile.Facts{{Key: slack("T1", "C1")}, {Key: conv.Key{Platform: "console", Chat: "local"}}}},
		{"team on a plain workspace", profile.Match{Team: "T2"},
			[]profile.Facts{{Key: slack("T2", "C1")}, {Key: slack("E1/T2", "C1")}},
			[]profile.Facts{{Key: slack("T3", "C1")}, {Key: slack("E1/T3", "C1")}, {Key: slack("E1", "C1")},
				{Key: conv.Key{Platform: "discord", Workspace: "T2", Chat: "1"}}}},
		{"enterprise", profile.Match{Enterprise: "E1"},
			[]profile.Facts{{Key: slack("E1/T2", "C1")}, {Key: slack("E1/T3", "C1")}, {Key: slack("E1", "C1")}},
			[]profile.Facts{{Key: slack("T2", "C1")}, {Key: slack("E9/T2", "C1")},
				{Key: conv.Key{Platform: "discord", Workspace: "E1", Chat: "1"}}}},
		{"enterprise and team", profile.Match{Enterprise: "E1", Team: "T2"},
			[]profile.Facts{{Key: slack("E1/T2", "C1")}},
			[]profile.Facts{{Key: slack("T2", "C1")}, {Key: slack("E1/T3", "C1")}, {Key: slack("E1", "C1")}}},
		{"guild", profile.Match{Guild: "112233445566778899"},
			[]profile.Facts{{Key: conv.Key{Platform: "discord", Workspace: "112233445566778899", Chat: "5"}}},
			[]profile.Facts{{Key: conv.Key{Platform: "discord", Workspace: "1", Chat: "5"}},
				{Key: slack("112233445566778899", "5")}}},
		{"channel", profile.Match{Channel: "C0456"},
			[]profile.Facts{{Key: slack("T1", "C0456")}, {Key: conv.Key{Platform: "discord", Workspace: "9", Chat: "C0456", Thread: "t"}}},
			[]profile.Facts{{Key: slack("T1", "C0457")}}},
		{"dm true", profile.Match{DM: yes()},
			[]profile.Facts{{Key: slack("T1", "D1"), Direct: true}},
			[]profile.Facts{{Key: slack("T1", "C1")}}},
		{"dm false", profile.Match{DM: no()},
			[]profile.Facts{{Key: slack("T1", "C1")}},
			[]profile.Facts{{Key: slack("T1", "D1"), Direct: true}}},
		{"user", profile.Match{User: "T1:U7"},
			[]profile.Facts{{Key: slack("T1", "C1"), User: "T1:U7"}},
			[]profile.Facts{{Key: slack("T1", "C1"), User: "T1:U8"}, {Key: slack("T1", "C1")}}},
		{"empty match", profile.Match{},
			[]profile.Facts{{Key: slack("T1", "C1")}, {Key: conv.Key{Platform: "console", Chat: "local"}, Direct: true}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, map[string]profile.Partial{"p": {}}, []profile.Route{{Match: tt.match, Profile: "p"}})
			for _, f := range tt.hit {
				if r := s.Resolve(f); r.Route != 0 || r.Profile.Name != "p" {
					t.Errorf("%+v: route %d profile %q, want route 0 profile p (%s)", f, r.Route, r.Profile.Name, r.Why)
				}
			}
			for _, f := range tt.miss {
				if r := s.Resolve(f); r.Route != -1 || r.Profile.Name != profile.Default {
					t.Errorf("%+v: route %d profile %q, want the default (%s)", f, r.Route, r.Profile.Name, r.Why)
				}
			}
		})
	}
}

// TestResolveAllSelectorsMustHold: a route with several selectors matches only when every one
// holds.
func TestResolveAllSelectorsMustHold(t *testing.T) {
	s := mustNew(t, map[string]profile.Partial{"support": {}}, []profile.Route{{
		Match:   profile.Match{Platform: "slack", Team: "T0123", Channel: "C0456", DM: no(), User: "T0123:U1"},
		Profile: "support",
	}})
	hit := profile.Facts{Key: slack("T0123", "C0456"), User: "T0123:U1"}
	if r := s.Resolve(hit); r.Route != 0 {
		t.Fatalf("route %d, want 0: %s", r.Route, r.Why)
	}
	for name, f := range map[string]profile.Facts{
		"other team":    {Key: slack("T9", "C0456"), User: "T0123:U1"},
		"other channel": {Key: slack("T0123", "C9"), User: "T0123:U1"},
		"a dm":          {Key: slack("T0123", "C0456"), User: "T0123:U1", Direct: true},
		"other user":    {Key: slack("T0123", "C0456"), User: "T0123:U2"},
	} {
		if r := s.Resolve(f); r.Route != -1 {
			t.Errorf("%s: route %d, want none", name, r.Route)
		}
	}
}

// TestResolveFirstMatchWins: routes are tried in order and the first that matches decides,
// even when a later one is more specific.
func TestResolveFirstMatchWins(t *testing.T) {
	s := mustNew(t, map[string]profile.Partial{"a": {}, "b": {}, "c": {}}, []profile.Route{
		{Match: profile.Match{Platform: "slack", Channel: "C1"}, Profile: "a"},
		{Match: profile.Match{Platform: "slack"}, Profile: "b"},
		{Match: profile.Match{Platform: "slack", Channel: "C2", User: "U1"}, Profile: "c"}, // never reached
		{Match: profile.Match{Platform: "console"}, Profile: profile.Default},
		{Match: profile.Match{}, Profile: "c"},
	})
	tests := []struct {
		f       profile.Facts
		route   int
		profile string
	}{
		{profile.Facts{Key: slack("T1", "C1")}, 0, "a"},
		{profile.Facts{Key: slack("T1", "C2"), User: "U1"}, 1, "b"},
		{profile.Facts{Key: conv.Key{Platform: "console", Chat: "local"}}, 3, profile.Default},
		{profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "5"}}, 4, "c"},
	}
	for _, tt := range tests {
		r := s.Resolve(tt.f)
		if r.Route != tt.route || r.Profile.Name != tt.profile {
			t.Errorf("%v: route %d profile %q, want %d %q", tt.f.Key, r.Route, r.Profile.Name, tt.route, tt.profile)
		}
	}
}

// TestResolveDefault: with no routes, or none matching, a run gets the default profile, named
// "default", exactly as given.
func TestResolveDefault(t *testing.T) {
	for name, s := range map[string]*profile.Set{
		"no routes":  mustNew(t, nil, nil),
		"no match":   mustNew(t, map[string]profile.Partial{"p": {Model: "x"}}, []profile.Route{{Match: profile.Match{Platform: "discord"}, Profile: "p"}}),
		"no profile": mustNew(t, map[string]profile.Partial{}, []profile.Route{}),
	} {
		t.Run(name, func(t *testing.T) {
			r := s.Resolve(profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "1"}})
			want := def()
			want.Name = profile.Default
			if r.Route != -1 || !reflect.DeepEqual(r.Profile, want) {
				t.Errorf("got route %d %+v, want the default %+v", r.Route, r.Profile, want)
			}
			if r.Why != "no route matches → the default profile (the top-level settings)" {
				t.Errorf("Why = %q", r.Why)
			}
		})
	}
}

// TestResolveWhy: the explanation names the route by index, its selectors and the profile.
func TestResolveWhy(t *testing.T) {
	s := mustNew(t, map[string]profile.Partial{"support": {}}, []profile.Route{
		{Match: profile.Match{Platform: "discord"}, Profile: "support"},
		{Match: profile.Match{Platform: "telegram", Channel: "-100", DM: no()}, Profile: profile.Default},
		{Match: profile.Match{Platform: "slack", Team: "T0123", Channel: "C0456"}, Profile: "support"},
		{Match: profile.Match{Enterprise: "E1", User: "E1:U1", DM: yes()}, Profile: "support"},
		{Match: profile.Match{}, Profile: "support"},
	})
	tests := []struct {
		f   profile.Facts
		why string
	}{
		{profile.Facts{Key: slack("T0123", "C0456")}, `route 2 (platform slack, team T0123, channel C0456) → profile "support"`},
		{profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "-100"}}, `route 1 (platform telegram, channel -100, dm false) → the default profile (the top-level settings)`},
		{profile.Facts{Key: slack("E1/T5", "D1"), Direct: true, User: "E1:U1"}, `route 3 (enterprise E1, dm true, user E1:U1) → profile "support"`},
		{profile.Facts{Key: conv.Key{Platform: "console", Chat: "local"}}, `route 4 (matches everything) → profile "support"`},
	}
	for _, tt := range tests {
		if got := s.Resolve(tt.f).Why; got != tt.why {
			t.Errorf("%v: Why = %q\nwant %q", tt.f.Key, got, tt.why)
		}
	}
}

// TestMergeTakesUnsetFieldsFromTheDefault: a profile's nil and zero fields are the default's;
// set ones (a non-nil empty tool list, vision false, depth 0) override it.
func TestMergeTakesUnsetFieldsFromTheDefault(t *testing.T) {
	base := profile.Profile{
		SystemPrompt: "base prompt", Model: "deepseek-chat", Models: []string{"deepseek-chat", "deepseek-reasoner"},
		Tools: []string{"everything__*"}, Vision: true, HistoryTurns: 50, Subagents: profile.Subagents{MaxDepth: 2, MaxConcurrent: 4},
	}
	s, err := profile.New(base, map[string]profile.Partial{
		"empty": {},
		"full": {SystemPrompt: "You answer tickets.", Model: "llama3.1", Provider: "local", Models: []string{"llama3.1"},
			Tools: []string{"tickets__*"}, Vision: no(), HistoryTurns: 20, Subagents: &profile.Subagents{MaxDepth: 0, MaxConcurrent: 1}},
		"notools": {Tools: []string{}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want profile.Profile
	}{
		{"empty", profile.Profile{Name: "empty", SystemPrompt: "base prompt", Model: "deepseek-chat",
			Models: []string{"deepseek-chat", "deepseek-reasoner"}, Tools: []string{"everything__*"}, Vision: true,
			HistoryTurns: 50, Subagents: profile.Subagents{MaxDepth: 2, MaxConcurrent: 4}}},
		{"full", profile.Profile{Name: "full", SystemPrompt: "You answer tickets.", Model: "llama3.1", Provider: "local",
			Models: []string{"llama3.1"}, Tools: []string{"tickets__*"}, Vision: false, HistoryTurns: 20,
			Subagents: profile.Subagents{MaxDepth: 0, MaxConcurrent: 1}}},
		{"notools", profile.Profile{Name: "notools", SystemPrompt: "base prompt", Model: "deepseek-chat",
			Models: []string{"deepseek-chat", "deepseek-reasoner"}, Tools: []string{}, Vision: true,
			HistoryTurns: 50, Subagents: profile.Subagents{MaxDepth: 2, MaxConcurrent: 4}}},
	}
	for _, tt := range tests {
		got, ok := s.Profile(tt.name)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Profile(%q) = %+v, %v\nwant %+v", tt.name, got, ok, tt.want)
		}
	}
	if p, _ := s.Profile("notools"); p.Tools == nil || p.AllowsTool("everything__echo") {
		t.Errorf("an empty tool list must mean no tools, got %#v", p.Tools)
	}
	if _, ok := s.Profile("missing"); ok {
		t.Error("Profile(missing) found something")
	}
}

// TestProfilesAreCopies: changing a returned profile's lists changes neither the Set nor the
// caller's configuration.
func TestProfilesAreCopies(t *testing.T) {
	tools := []string{"a__*"}
	s := mustNew(t, map[string]profile.Partial{"p": {Tools: tools}}, []profile.Route{{Profile: "p"}})
	got := s.Resolve(profile.Facts{Key: slack("T", "C")}).Profile
	got.Tools[0] = "changed"
	tools[0] = "changed too"
	if again, _ := s.Profile("p"); again.Tools[0] != "a__*" {
		t.Errorf("the Set's profile changed: %v", again.Tools)
	}
}

func TestNames(t *testing.T) {
	s := mustNew(t, map[string]profile.Partial{"support": {}, "Alpha": {}, "community": {}}, nil)
	if got, want := s.Names(), []string{"default", "Alpha", "community", "support"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got := mustNew(t, nil, nil).Names(); !slices.Equal(got, []string{"default"}) {
		t.Errorf("Names() = %v", got)
	}
}

// TestNewRefusesBadProfilesAndRoutes: each problem is an error naming the profile or the route.
func TestNewRefusesBadProfilesAndRoutes(t *testing.T) {
	tests := []struct {
		name     string
		profiles map[string]profile.Partial
		routes   []profile.Route
		want     string
	}{
		{"unknown profile", map[string]profile.Partial{"a": {}}, []profile.Route{{Profile: "a"}, {Profile: "b"}}, `routes[1]: no profile "b"`},
		{"empty profile name in a route", nil, []profile.Route{{}}, `routes[0]: no profile ""`},
		{"default is reserved", map[string]profile.Partial{"default": {}}, nil, "profiles.default"},
		{"in any case", map[string]profile.Partial{"Default": {}}, nil, "profiles.Default"},
		{"bad name", map[string]profile.Partial{"a b": {}}, nil, "profiles.a b"},
		{"name too long", map[string]profile.Partial{strings.Repeat("a", 65): {}}, nil, "profiles.aaa"},
		{"negative history", map[string]profile.Partial{"a": {HistoryTurns: -1}}, nil, "profiles.a: history"},
		{"negative subagents", map[string]profile.Partial{"a": {Subagents: &profile.Subagents{MaxDepth: -1}}}, nil, "profiles.a: subagent"},
		{"bad glob", map[string]profile.Partial{"a": {Tools: []string{"["}}}, nil, "profiles.a: tools glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := profile.New(def(), tt.profiles, tt.routes)
			if err == nil || s != nil {
				t.Fatalf("New = %v, %v; want an error", s, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	// Every problem at once.
	_, err := profile.New(def(), map[string]profile.Partial{"default": {}, "a": {HistoryTurns: -2}}, []profile.Route{{Profile: "x"}})
	for _, want := range []string{"profiles.default", "profiles.a", "routes[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// TestNewKeepsItsOwnRoutes: changing the caller's routes after New changes nothing.
func TestNewKeepsItsOwnRoutes(t *testing.T) {
	dm := true
	routes := []profile.Route{{Match: profile.Match{DM: &dm}, Profile: "p"}}
	s := mustNew(t, map[string]profile.Partial{"p": {}}, routes)
	dm = false
	routes[0].Profile = "gone"
	if r := s.Resolve(profile.Facts{Key: slack("T", "D"), Direct: true}); r.Profile.Name != "p" {
		t.Errorf("got %q (%s), want p", r.Profile.Name, r.Why)
	}
}

func TestAllowsTool(t *testing.T) {
	tests := []struct {
		tools []string
		name  string
		want  bool
	}{
		{nil, "anything__at_all", true},
		{[]string{}, "tickets__create", false},
		{[]string{"tickets__*"}, "tickets__create", true},
		{[]string{"tickets__*"}, "wiki__search", false},
		{[]string{"wiki__search", "tickets__get_?"}, "tickets__get_1", true},
		{[]string{"tickets__get_?"}, "tickets__get_10", false},
		{[]string{"["}, "[", false}, // a bad glob matches nothing
		{[]string{"*"}, "a__b", true},
	}
	for _, tt := range tests {
		if got := (profile.Profile{Tools: tt.tools}).AllowsTool(tt.name); got != tt.want {
			t.Errorf("Tools %#v AllowsTool(%q) = %v, want %v", tt.tools, tt.name, got, tt.want)
		}
	}
}

func TestAllowsModel(t *testing.T) {
	if !(profile.Profile{}).AllowsModel("anything") {
		t.Error("nil Models must allow any model")
	}
	p := profile.Profile{Models: []string{"deepseek-chat", "deepseek-reasoner"}}
	if !p.AllowsModel("deepseek-reasoner") || p.AllowsModel("gpt-4o") || p.AllowsModel("") {
		t.Errorf("Models %v: wrong answers", p.Models)
	}
	if (profile.Profile{Models: []string{}}).AllowsModel("deepseek-chat") {
		t.Error("an empty Models list allows nothing")
	}
}
