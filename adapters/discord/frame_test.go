package discord

import (
	"encoding/json"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

func TestDecodeFrameReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		`{"op":10,"d":{"heartbeat_interval":41250,"_trace":["gateway"]},"s":null,"t":null}`,
		`{"t":"MESSAGE_CREATE","s":42,"op":0,"d":{"id":"1","channel_id":"2","content":"hi \u00e9","author":{"id":"3","bot":false},"mentions":[]}}`,
		`{"op":11}`,
		`{"op":11,"d":null}`,
		`{"op":9,"d":false}`,
		`{"op":7,"d":null,"s":null,"t":null,"extra":[1]}`,
		`{"OP":1}`,
	} {
		if _, err := decodeFrame([]byte(body)); err != nil {
			t.Errorf("decodeFrame(%s): %v", body, err)
		}
		if err := jsonwire.SameAsUnmarshal([]byte(body), decodeFrame); err != nil {
			t.Error(err)
		}
	}
	for _, body := range []string{``, `{"op":"0"}`, `{"op":0,"s":1.5}`, `{"op":0} x`, `{"d":{]}`} {
		if f, err := decodeFrame([]byte(body)); err == nil {
			t.Errorf("decodeFrame(%s) = %+v, want an error", body, f)
		}
	}
}

func TestSentIDReadsWhatEncodingJSONReads(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":"123","type":0,"content":"x","channel_id":"9","author":{"id":"5"},"embeds":[],"nonce":null}`: "123",
		`{"ID":"7"}`:   "7", // encoding/json takes a key in another case
		`{"id":null}`:  "",
		`{"id":5}`:     "",
		`not json`:     "",
		`{"id":"1"} x`: "",
	} {
		if got := sentID([]byte(body)); got != want {
			t.Errorf("sentID(%s) = %q, want %q", body, got, want)
		}
	}
}

// FuzzDecodeFrame checks decodeFrame against encoding/json: the same frame, or an error from both.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"t":"MESSAGE_CREATE","s":42,"op":0,"d":{"id":"1","content":"x"}}`))
	f.Add([]byte(`{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := jsonwire.SameAsUnmarshal(data, decodeFrame); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSentID checks sentID against encoding/json.
func FuzzSentID(f *testing.F) {
	f.Add([]byte(`{"id":"123","content":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s sent
		want := ""
		if json.Unmarshal(data, &s) == nil {
			want = s.ID
		}
		if got := sentID(data); got != want {
			t.Fatalf("sentID = %q, encoding/json %q", got, want)
		}
	})
}
