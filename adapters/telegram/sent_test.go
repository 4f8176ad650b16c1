package telegram

import (
	"encoding/json"
	"testing"
)

func TestSentMessageIDReadsWhatEncodingJSONReads(t *testing.T) {
	for body, want := range map[string]int{
		`{"message_id":42,"from":{"id":1,"is_bot":true},"chat":{"id":7,"type":"private"},"date":1,"text":"hi","entities":[{"type":"bold","offset":0,"length":2}]}`: 42,
		`{"Message_ID":9}`:          9, // encoding/json takes a key in another case
		`{"message_id":null}`:       0,
		`{"message_id":"42"}`:       0,
		`{"message_id":1.5}`:        0,
		`[]`:                        0,
		`{"message_id":3} {}`:       0,
		`{"message_id":9999999999}`: 9999999999,
	} {
		if got := sentMessageID([]byte(body)); got != want {
			t.Errorf("sentMessageID(%s) = %d, want %d", body, got, want)
		}
	}
}

// FuzzSentMessageID checks sentMessageID against encoding/json.
func FuzzSentMessageID(f *testing.F) {
	f.Add([]byte(`{"message_id":42,"chat":{"id":7},"text":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s sentMessage
		want := 0
		if json.Unmarshal(data, &s) == nil {
			want = s.MessageID
		}
		if got := sentMessageID(data); got != want {
			t.Fatalf("sentMessageID = %d, encoding/json %d", got, want)
		}
	})
}
