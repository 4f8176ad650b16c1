package discord

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDecodeFrame(t *testing.T) {
	for _, tt := range []struct {
		body string
		want frame
	}{
		{`{"op":10,"d":{"heartbeat_interval":41250,"_trace":["gateway"]},"s":null,"t":null}`,
			frame{Op: opHello, D: json.RawMessage(`{"heartbeat_interval":41250,"_trace":["gateway"]}`)}},
		{`{"t":"MESSAGE_CREATE","s":42,"op":0,"d":{"id":"1","content":"hi \u00e9"}}`,
			frame{Op: opDispatch, D: json.RawMessage(`{"id":"1","content":"hi \u00e9"}`), S: 42, T: "MESSAGE_CREATE"}},
		{`{"op":11}`, frame{Op: opHeartbeatAck}},
		{`{"op":11,"d":null}`, frame{Op: opHeartbeatAck, D: json.RawMessage(`null`)}},
		{`{"op":9,"d":false}`, frame{Op: opInvalidSession, D: json.RawMessage(`false`)}},
		{`{"op":7,"d":null,"s":null,"t":null,"extra":[1]}`, frame{Op: opReconnect, D: json.RawMessage(`null`)}},
		{`{"OP":1}`, frame{Op: opHeartbeat}},
	} {
		got, err := decodeFrame([]byte(tt.body))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decodeFrame(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
}

func TestDecodeFrameRejectsMalformedInput(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"op":"0"}`, `{"op":0,"s":1.5}`, `{"op":0} x`, `{"d":{]}`, `{"op":0,"d":`} {
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

// FuzzDecodeFrame checks that decodeFrame never panics, and that a frame it reads encodes to
// JSON it reads back into a frame that encodes the same.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"t":"MESSAGE_CREATE","s":42,"op":0,"d":{"id":"1","content":"x"}}`))
	f.Add([]byte(`{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil {
			return
		}
		enc, err := json.Marshal(fr)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", fr, err)
		}
		again, err := decodeFrame(enc)
		if err != nil {
			t.Fatalf("decodeFrame(%s): %v", enc, err)
		}
		if enc2, err := json.Marshal(again); err != nil || string(enc2) != string(enc) {
			t.Fatalf("%s read back encodes as %s (%v)", enc, enc2, err)
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

// BenchmarkDecodeFrame decodes one gateway MESSAGE_CREATE dispatch: once per message.
//
//	go test -run '^$' -bench DecodeFrame -benchmem ./adapters/discord/
func BenchmarkDecodeFrame(b *testing.B) {
	data := []byte(`{"t":"MESSAGE_CREATE","s":42,"op":0,"d":{"type":0,"tts":false,"timestamp":"2026-12-01T10:00:00.000000+00:00","pinned":false,"nonce":"1312345678901234567","mentions":[],"mention_roles":[],"mention_everyone":false,"id":"1312345678901234568","flags":0,"embeds":[],"edited_timestamp":null,"content":"could you look into the thing we talked about earlier?","components":[],"channel_id":"1312345678901234000","author":{"username":"ann","public_flags":0,"id":"1312345678901234001","global_name":"Ann","discriminator":"0","avatar":null},"attachments":[]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if f, err := decodeFrame(data); err != nil || f.T != "MESSAGE_CREATE" {
			b.Fatal(f, err)
		}
	}
}
