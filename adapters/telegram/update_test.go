package telegram

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestDecodeUpdateRejectsMalformedInput(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ``},
		{"not json", `hello`},
		{"truncated", `{"update_id":1,"message":{`},
		{"array", `[]`},
		{"zero id", `{"update_id":0}`},
		{"negative id", `{"update_id":-3}`},
		{"string id", `{"update_id":"7"}`},
		{"message without chat", `{"update_id":1,"message":{"message_id":2}}`},
		{"message without id", `{"update_id":1,"message":{"chat":{"id":1,"type":"private"}}}`},
		{"callback without id", `{"update_id":1,"callback_query":{"from":{"id":1}}}`},
		{"callback without sender", `{"update_id":1,"callback_query":{"id":"q"}}`},
		{"wrong type text", `{"update_id":1,"message":{"message_id":2,"chat":{"id":1},"text":5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeUpdate([]byte(tt.in)); !errors.Is(err, errMalformedUpdate) {
				t.Fatalf("decodeUpdate(%q) = %v, want errMalformedUpdate", tt.in, err)
			}
		})
	}
}

func TestToInboundIgnoresWhatTheBotDoesNotHandle(t *testing.T) {
	bot := botIdentity{id: 1, username: "me_bot"}
	tests := []struct {
		name string
		in   string
	}{
		{"edited message", `{"update_id":1,"edited_message":{"message_id":2,"chat":{"id":1,"type":"private"},"text":"x"}}`},
		{"sticker only", `{"update_id":1,"message":{"message_id":2,"chat":{"id":1,"type":"private"}}}`},
		{"inline callback", `{"update_id":1,"callback_query":{"id":"q","from":{"id":5},"inline_message_id":"i"}}`},
		{"other bot's command", `{"update_id":1,"message":{"message_id":2,"chat":{"id":-1,"type":"group"},"text":"/x@other_bot","entities":[{"type":"bot_command","offset":0,"length":12}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := decodeUpdate([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if in, ok := toInbound(u, bot, time.Time{}); ok {
				t.Fatalf("converted to %+v, want ignored", in)
			}
		})
	}
}

func TestEntityOffsetsCountUTF16(t *testing.T) {
	// "🙂 " is three UTF-16 units; the mention starts after it.
	raw := `{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":-1,"type":"supergroup"},"text":"🙂 @me_bot hi","entities":[{"type":"mention","offset":3,"length":7}]}}`
	u, err := decodeUpdate([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	in, ok := toInbound(u, botIdentity{id: 1, username: "me_bot"}, time.Time{})
	if !ok || !in.AddressesBot {
		t.Fatalf("mention after an emoji not seen: %+v", in)
	}
}

func FuzzDecodeUpdate(f *testing.F) {
	seeds := []string{
		`{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":-1,"type":"supergroup"},"text":"/new@me_bot x","entities":[{"type":"bot_command","offset":0,"length":11}]}}`,
		`{"update_id":1,"message":{"message_id":2,"chat":{"id":1,"type":"private"},"text":"🙂","entities":[{"type":"mention","offset":1,"length":90}]}}`,
		`{"update_id":2,"callback_query":{"id":"q","from":{"id":5},"message":{"message_id":3,"chat":{"id":5,"type":"private"}},"data":"d"}}`,
		`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup","is_forum":true},"message_thread_id":7,"is_topic_message":true,"reply_to_message":{"message_id":7,"chat":{"id":-9}},"caption":"c"}}`,
		`{"update_id":`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	bot := botIdentity{id: 1, username: "me_bot"}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := decodeUpdate(data)
		if err != nil {
			return
		}
		in, ok := toInbound(u, bot, time.Time{})
		if ok && in.EventID == "" {
			t.Fatalf("converted update without event id: %+v", in)
		}
	})
}

// TestDecodeUpdateReadsWhatTelegramSends: the common text message, the shapes around it (other
// kinds, fields the adapter does not take, case-folded or doubled keys, nulls) decode.
func TestDecodeUpdateReadsWhatTelegramSends(t *testing.T) {
	for _, tt := range []struct {
		body       string
		id         int64
		text, from string
	}{
		{wireUpdate(7, "hello"), 7, "hello", "Ann"},
		{`{"update_id":1,"message":{"message_id":2,"from":{"id":9,"is_bot":false,"first_name":"A","last_name":"B","username":"ab","language_code":"en"},"chat":{"id":-1,"type":"supergroup","title":"T","username":"g"},"date":5,"text":"/new@me_bot x","entities":[{"type":"bot_command","offset":0,"length":11},{"type":"text_link","offset":1,"length":2,"url":"https://x"}]}}`, 1, "/new@me_bot x", "A"},
		{`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup"},"message_thread_id":7,"is_topic_message":true,"text":"t","entities":[]}}`, 3, "t", ""},
		{`{"update_id":1,"message":{"message_id":2,"chat":{"id":1,"type":"private"},"text":"x","from":null,"entities":null}}`, 1, "x", ""},
		{`{"update_id":1,"Message":{"message_id":2,"chat":{"id":1}}}`, 1, "", ""},
		{`{"update_id":1,"update_id":2}`, 2, "", ""},
		{` { "update_id" : 1 , "message" : { "message_id" : 2 , "chat" : { "id" : 1 } , "text" : "caf\u00e9" } } `, 1, "café", ""},
	} {
		u, err := decodeUpdate([]byte(tt.body))
		if err != nil {
			t.Errorf("decodeUpdate(%s): %v", tt.body, err)
			continue
		}
		var text, from string
		if u.Message != nil {
			text = u.Message.Text
			if u.Message.From != nil {
				from = u.Message.From.FirstName
			}
		}
		if u.UpdateID != tt.id || text != tt.text || from != tt.from {
			t.Errorf("decodeUpdate(%s) = update %d, text %q from %q; want %d, %q from %q", tt.body, u.UpdateID, text, from, tt.id, tt.text, tt.from)
		}
	}
}

// FuzzDecodeUpdateRoundTrip checks that an update decodeUpdate reads encodes to JSON it reads
// back into an update that encodes the same.
func FuzzDecodeUpdateRoundTrip(f *testing.F) {
	f.Add([]byte(wireUpdate(7, "hello")))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":-1,"type":"supergroup"},"text":"🙂 @me_bot hi","entities":[{"type":"mention","offset":3,"length":7}]}}`))
	f.Add([]byte(`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup"},"message_thread_id":7,"is_topic_message":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := decodeUpdate(data)
		if err != nil {
			return
		}
		enc, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", u, err)
		}
		again, err := decodeUpdate(enc)
		if err != nil {
			t.Fatalf("decodeUpdate(%s): %v", enc, err)
		}
		if enc2, err := json.Marshal(again); err != nil || string(enc2) != string(enc) {
			t.Fatalf("%s read back encodes as %s (%v)", enc, enc2, err)
		}
	})
}

// BenchmarkDecodeUpdate decodes one text message update: once per message.
//
//	go test -run '^$' -bench DecodeUpdate -benchmem ./adapters/telegram/
func BenchmarkDecodeUpdate(b *testing.B) {
	data := []byte(`{"update_id":123456789,"message":{"message_id":4242,"from":{"id":42,"is_bot":false,"first_name":"Ann","last_name":"Lee","username":"ann","language_code":"en"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1764504000,"text":"@me_bot could you look into the thing we talked about earlier?","entities":[{"offset":0,"length":7,"type":"mention"}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if u, err := decodeUpdate(data); err != nil || u.Message == nil {
			b.Fatal(u, err)
		}
	}
}

// TestWhichThreadIsAConversation: a forum topic and a private chat's topic (Bot API 9.3; with
// is_topic_message or without) are conversations of their own; a reply thread of an ordinary
// supergroup is not.
func TestWhichThreadIsAConversation(t *testing.T) {
	for _, tt := range []struct {
		name, body, thread string
	}{
		{"forum topic", `{"update_id":1,"message":{"message_id":5,"from":{"id":9,"first_name":"A"},"chat":{"id":-9,"type":"supergroup","is_forum":true},"message_thread_id":7,"is_topic_message":true,"text":"t"}}`, "7"},
		{"private topic", `{"update_id":1,"message":{"message_id":5,"from":{"id":9,"first_name":"A"},"chat":{"id":9,"type":"private"},"message_thread_id":7,"is_topic_message":true,"text":"t"}}`, "7"},
		{"private topic without is_topic_message", `{"update_id":1,"message":{"message_id":5,"from":{"id":9,"first_name":"A"},"chat":{"id":9,"type":"private"},"message_thread_id":7,"text":"t"}}`, "7"},
		{"private chat", `{"update_id":1,"message":{"message_id":5,"from":{"id":9,"first_name":"A"},"chat":{"id":9,"type":"private"},"text":"t"}}`, ""},
		{"supergroup reply thread", `{"update_id":1,"message":{"message_id":5,"from":{"id":9,"first_name":"A"},"chat":{"id":-9,"type":"supergroup"},"message_thread_id":7,"text":"/new"}}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := decodeUpdate([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			in, ok := toInbound(u, botIdentity{id: 1, username: "me_bot"}, time.Time{})
			if !ok || in.Conv.Thread != tt.thread {
				t.Fatalf("conv %+v (ok %v), want thread %q", in.Conv, ok, tt.thread)
			}
		})
	}
}
