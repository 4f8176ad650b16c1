package telegram

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
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

// TestUnmarshalUpdateReadsWhatEncodingJSONReads holds the one-pass reading of updates to
// encoding/json's: the common text message, read in one pass, and every shape it leaves to
// encoding/json (other kinds, fields it does not take, case-folded or doubled keys, nulls).
func TestUnmarshalUpdateReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		wireUpdate(7, "hello"),
		`{"update_id":1,"message":{"message_id":2,"from":{"id":9,"is_bot":false,"first_name":"A","last_name":"B","username":"ab","language_code":"en"},"chat":{"id":-1,"type":"supergroup","title":"T","username":"g"},"date":5,"text":"/new@me_bot x","entities":[{"type":"bot_command","offset":0,"length":11},{"type":"text_link","offset":1,"length":2,"url":"https://x"},{"type":"pre","offset":0,"length":1,"language":"go"}]}}`,
		`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup"},"message_thread_id":7,"is_topic_message":true,"text":"t","entities":[]}}`,
		`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup","is_forum":true},"reply_to_message":{"message_id":7,"chat":{"id":-9}},"caption":"c"}}`,
		`{"update_id":2,"callback_query":{"id":"q","from":{"id":5},"message":{"message_id":3,"chat":{"id":5,"type":"private"}},"data":"d"}}`,
		`{"update_id":1,"message":{"message_id":2,"chat":{"id":1,"type":"private"},"text":"x","from":null,"entities":null}}`,
		`{"update_id":1,"message":null}`,
		`{"update_id":1,"Message":{"message_id":2,"chat":{"id":1}}}`,
		`{"update_id":1,"update_id":2}`,
		`{"update_id":1,"message":{"message_id":2,"chat":{"id":1},"entities":[{"type":"mention","offset":0,"length":3,"user":{"id":4}}]}}`,
		`{"update_id":1,"edited_message":{"message_id":2,"chat":{"id":1}}}`,
		` { "update_id" : 1 , "message" : { "message_id" : 2 , "chat" : { "id" : 1 } , "text" : "caf\u00e9" } } `,
	} {
		if _, err := unmarshalUpdate([]byte(body)); err != nil {
			t.Errorf("unmarshalUpdate(%s): %v", body, err)
		}
		if err := jsonwire.SameAsUnmarshal([]byte(body), unmarshalUpdate); err != nil {
			t.Error(err)
		}
	}
	// The common shapes are read in one pass, not left to encoding/json.
	for _, body := range []string{wireUpdate(7, "hello"), ` { "update_id" : 1 , "message" : { "message_id" : 2 , "chat" : { "id" : 1 } , "text" : "caf\u00e9" } } `} {
		var u update
		r := jsonwire.NewReader([]byte(body))
		if readUpdate(r, &u); !r.End() {
			t.Errorf("%s is left to encoding/json", body)
		}
	}
	for _, body := range []string{``, `[]`, `{"update_id":1.5}`, `{"update_id":1,"message":{"message_id":"2"}}`, `{"update_id":1} x`, `{"update_id":1,"message":{"chat":{"id":1e3}}}`} {
		if err := jsonwire.SameAsUnmarshal([]byte(body), unmarshalUpdate); err != nil {
			t.Error(err)
		}
		if _, err := unmarshalUpdate([]byte(body)); err == nil {
			t.Errorf("unmarshalUpdate(%s) took it, want encoding/json's error", body)
		}
	}
}

// FuzzUnmarshalUpdate holds the one-pass reading of updates to encoding/json's on any input.
func FuzzUnmarshalUpdate(f *testing.F) {
	f.Add([]byte(wireUpdate(7, "hello")))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":-1,"type":"supergroup"},"text":"🙂 @me_bot hi","entities":[{"type":"mention","offset":3,"length":7}]}}`))
	f.Add([]byte(`{"update_id":3,"message":{"message_id":4,"chat":{"id":-9,"type":"supergroup"},"message_thread_id":7,"is_topic_message":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonwire.SameAsUnmarshal(data, unmarshalUpdate); err != nil {
			t.Fatal(err)
		}
	})
}
