package render

import (
	"strings"
	"testing"
)

func TestNeutralizeUsernamesOnTelegramOnly(t *testing.T) {
	in := "ask @alice or @Bob_2, mail bob@example.com, see https://x.y/@z, pay @ 5"
	tg := ConvertMarkdown(in, DialectTelegram)
	for _, want := range []string{"@" + zwsp + "alice", "@" + zwsp + "Bob_2", "bob@example.com", "x.y/@z", "@ 5"} {
		if !strings.Contains(tg, want) {
			t.Errorf("telegram output %q lacks %q", tg, want)
		}
	}
	if strings.Contains(tg, "@alice") {
		t.Errorf("telegram output %q still pings @alice", tg)
	}
	if sl := ConvertMarkdown(in, DialectSlack); !strings.Contains(sl, "@alice") {
		t.Errorf("slack output %q changed a plain @name, which does not ping there", sl)
	}
	card, err := Telegram(Card{Title: "hi @carol", Status: StatusDone, Body: "ok"}, Key{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(card[0].Text, "@carol") {
		t.Errorf("telegram card title pings @carol: %q", card[0].Text)
	}
}
