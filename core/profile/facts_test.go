package profile_test

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/profile"
)

func TestParseFacts(t *testing.T) {
	tests := []struct {
		in   string
		want profile.Facts
	}{
		{"slack:T0123:C0456:", profile.Facts{Key: slack("T0123", "C0456")}},
		{"slack:E1/T2:C0456:1712345678.000100", profile.Facts{Key: conv.Key{Platform: "slack", Workspace: "E1/T2", Chat: "C0456", Thread: "1712345678.000100"}}},
		{"  telegram::-100123:  dm  ", profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "-100123"}, Direct: true}},
		{"discord:112233445566778899:55: user=42", profile.Facts{Key: conv.Key{Platform: "discord", Workspace: "112233445566778899", Chat: "55"}, User: "42"}},
		{"slack:T1:D1: user=T1:U7 dm", profile.Facts{Key: slack("T1", "D1"), Direct: true, User: "T1:U7"}},
		{"console::local%3Achat:", profile.Facts{Key: conv.Key{Platform: "console", Chat: "local:chat"}}},
	}
	for _, tt := range tests {
		got, err := profile.ParseFacts(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFacts(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestParseFactsRefusesMalformedInput: each malformed input is an error that says what is wrong.
func TestParseFactsRefusesMalformedInput(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "no conversation key"},
		{"   ", "no conversation key"},
		{"slack:T0123:C0456", "not a conversation key"},
		{"slack:T0123:C0456:t:x", "not a conversation key"},
		{"slack:T%zz:C1:", "not a conversation key"},
		{"irc::chan:", "platform must be one of"},
		{":T1:C1:", "platform must be one of"},
		{"slack:T1::", "names no chat"},
		{"slack:T1:C1: dm dm", "dm is given twice"},
		{"slack:T1:C1: user=a user=b", "given twice"},
		{"slack:T1:C1: user=", "user= needs"},
		{"slack:T1:C1: direct", `unknown flag "direct"`},
		{"slack:T1:C1: dm=false", `unknown flag "dm=false"`},
		{"slack:T1:C1: slack:T1:C2:", "unknown flag"},
	}
	for _, tt := range tests {
		_, err := profile.ParseFacts(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFacts(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// TestParseFactsReadsWhatKeyStringPrints: every key String prints (with a chat on a known
// platform) parses back to itself.
func TestParseFactsReadsWhatKeyStringPrints(t *testing.T) {
	for _, k := range []conv.Key{
		{Platform: "slack", Workspace: "E1/T2", Chat: "C1", Thread: "1.2"},
		{Platform: "telegram", Chat: "-1001", Thread: "7"},
		{Platform: "console", Chat: "50%:off"},
	} {
		f, err := profile.ParseFacts(k.String() + " dm")
		if err != nil || f.Key != k || !f.Direct {
			t.Errorf("ParseFacts(%q) = %+v, %v", k.String(), f, err)
		}
	}
}
