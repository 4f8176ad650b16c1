package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestEncodeActionRoundTripsAndFitsTelegramCallbackData(t *testing.T) {
	longToken := strings.Repeat("Z", MaxTokenLen)
	tests := []struct {
		name string
		id   ActionID
	}{
		{"choose", ActionID{Kind: ActionChoose, Token: testToken, Field: 2, Option: 24}},
		{"button", ActionID{Kind: ActionButton, Token: "r-1"}},
		{"max everything", ActionID{Kind: ActionSkip, Token: longToken, Field: 255, Option: 255}},
		{"every kind", ActionID{Kind: actionKindEnd - 1, Token: "a_b-C", Field: 1, Option: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := EncodeAction(testKey, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(s) > MaxActionLen || len(s) > TelegramMaxCallbackData {
				t.Fatalf("encoded id is %d bytes: %q", len(s), s)
			}
			got, err := DecodeAction(testKey, s)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.id {
				t.Fatalf("round trip: got %+v, want %+v", got, tt.id)
			}
		})
	}
}

func TestEncodeActionRejectsWhatCannotBeSigned(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		id   ActionID
		want error
	}{
		{"no key", Key{}, ActionID{Kind: ActionChoose, Token: "t"}, ErrNoKey},
		{"empty token", testKey, ActionID{Kind: ActionChoose}, ErrBadToken},
		{"token too long", testKey, ActionID{Kind: ActionChoose, Token: strings.Repeat("a", MaxTokenLen+1)}, ErrBadToken},
		{"token with a dot", testKey, ActionID{Kind: ActionChoose, Token: "a.b"}, ErrBadToken},
		{"zero kind", testKey, ActionID{Token: "t"}, nil},
		{"option out of range", testKey, ActionID{Kind: ActionChoose, Token: "t", Option: 256}, nil},
		{"negative field", testKey, ActionID{Kind: ActionChoose, Token: "t", Field: -1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeAction(tt.key, tt.id)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeActionRejectsMalformedAndForgedIDs(t *testing.T) {
	good, err := EncodeAction(testKey, ActionID{Kind: ActionChoose, Token: testToken, Field: 1, Option: 2})
	if err != nil {
		t.Fatal(err)
	}
	other := mustKey("another-key-that-is-long-enough!")
	signedByOther, _ := EncodeAction(other, ActionID{Kind: ActionChoose, Token: testToken, Field: 1, Option: 2})
	dot := strings.LastIndexByte(good, '.')
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrMalformedAction},
		{"too short", "1b0000t.x", ErrMalformedAction},
		{"too long", good + strings.Repeat("A", MaxActionLen), ErrMalformedAction},
		{"no separator", strings.Replace(good, ".", "_", 1), ErrMalformedAction},
		{"unknown version", "2" + good[1:], ErrMalformedAction},
		{"unknown kind", good[:1] + "z" + good[2:], ErrMalformedAction},
		{"kind below range", good[:1] + "A" + good[2:], ErrMalformedAction},
		{"uppercase hex", good[:2] + "0A" + good[4:], ErrMalformedAction},
		{"non-hex option", good[:4] + "zz" + good[6:], ErrMalformedAction},
		{"bad token byte", good[:6] + "!" + good[7:], ErrMalformedAction},
		{"signature not base64url", good[:dot+1] + "++++++++++++++++", ErrMalformedAction},
		{"signature too short", good[:len(good)-1], ErrMalformedAction},
		{"altered option", good[:4] + "03" + good[6:], ErrForgedAction},
		{"altered field", good[:2] + "00" + good[4:], ErrForgedAction},
		{"altered kind", good[:1] + "a" + good[2:], ErrForgedAction},
		{"altered token", good[:6] + "X" + good[7:], ErrForgedAction},
		{"altered signature", flip(good, len(good)-2), ErrForgedAction},
		{"signed with another key", signedByOther, ErrForgedAction},
		{"swapped signature", good[:dot] + signedByOther[dot:], ErrForgedAction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := DecodeAction(testKey, tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeAction(%q) = %+v, %v; want %v", tt.in, id, err, tt.want)
			}
			var ae *ActionError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T is not *ActionError", err)
			}
			if id != (ActionID{}) {
				t.Fatalf("a rejected id returned %+v", id)
			}
		})
	}
	t.Run("zero key", func(t *testing.T) {
		if _, err := DecodeAction(Key{}, good); !errors.Is(err, ErrNoKey) {
			t.Fatalf("got %v, want ErrNoKey", err)
		}
	})
}

func TestKeyNeverPrintsItsSecret(t *testing.T) {
	secret := "super-secret-action-key-material"
	k := mustKey(secret)
	c := struct{ K Key }{k}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		for _, v := range []any{k, c, &c} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, secret) || strings.Contains(out, fmt.Sprintf("%x", secret)) {
				t.Fatalf("%s printed the secret: %s", verb, out)
			}
		}
	}
	if _, err := NewKey([]byte("short")); err == nil || strings.Contains(err.Error(), "short") {
		t.Fatalf("short key: err %v (must fail without echoing the key)", err)
	}
}

// TestRenderedIDsDecodeToTheirFieldAndOption proves every interactive id a
// renderer emits comes back as the action it was drawn for.
func TestRenderedIDsDecodeToTheirFieldAndOption(t *testing.T) {
	card := goldenCards[3].card // waiting_form: 4 fields, Step 1 (multi_choice)
	tg, err := Telegram(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	kb := tg[len(tg)-1].ReplyMarkup.InlineKeyboard
	for j := 0; j < 4; j++ {
		id, err := DecodeAction(testKey, kb[j][0].CallbackData)
		if err != nil {
			t.Fatal(err)
		}
		if want := (ActionID{Kind: ActionToggle, Token: testToken, Field: 1, Option: j}); id != want {
			t.Fatalf("button %d: %+v, want %+v", j, id, want)
		}
	}
	if id, _ := DecodeAction(testKey, kb[4][0].CallbackData); id.Kind != ActionSubmit || id.Field != 1 {
		t.Fatalf("Done button decodes to %+v", id)
	}
	if !strings.HasPrefix(kb[0][0].Text, "✅") || !strings.HasPrefix(kb[1][0].Text, "▫️") {
		t.Fatalf("selected options are not ticked: %q, %q", kb[0][0].Text, kb[1][0].Text)
	}
	view, err := SlackModal(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range view.Blocks[1:5] {
		id, err := DecodeAction(testKey, b.Element.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		if id.Field != i || id.Token != testToken {
			t.Fatalf("input %d decodes to %+v", i, id)
		}
		for j, o := range b.Element.Options {
			oid, err := DecodeAction(testKey, o.Value)
			if err != nil || oid != (ActionID{Kind: ActionChoose, Token: testToken, Field: i, Option: j}) {
				t.Fatalf("input %d option %d decodes to %+v, %v", i, j, oid, err)
			}
		}
	}
}

func FuzzDecodeAction(f *testing.F) {
	good, _ := EncodeAction(testKey, ActionID{Kind: ActionChoose, Token: testToken, Field: 1, Option: 2})
	for _, s := range []string{"", good, good[:len(good)-1] + "A", "1a0000x.AAAAAAAAAAAAAAAA", strings.Repeat(".", 64), "1\xff0000tok.AAAAAAAAAAAAAAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := DecodeAction(testKey, s)
		if err != nil {
			if !errors.Is(err, ErrMalformedAction) && !errors.Is(err, ErrForgedAction) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Anything accepted must be exactly what we would have signed.
		again, err := EncodeAction(testKey, id)
		if err != nil || again != s {
			t.Fatalf("accepted %q but it re-encodes to %q, %v", s, again, err)
		}
	})
}
