package slack

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeFrame(t *testing.T) {
	for _, tt := range []struct {
		body string
		want frame
	}{
		{`{"type":"hello","num_connections":1,"debug_info":{"host":"h","approximate_connection_time":18060},"connection_info":{"app_id":"A1"}}`,
			frame{Type: "hello"}},
		{`{"envelope_id":"e1","payload":{"team_id":"T1","event":{"type":"app_mention","text":"hi \u00e9"}},"type":"events_api","accepts_response_payload":false,"retry_attempt":2,"retry_reason":"timeout"}`,
			frame{Type: "events_api", EnvelopeID: "e1", Payload: json.RawMessage(`{"team_id":"T1","event":{"type":"app_mention","text":"hi \u00e9"}}`), RetryAttempt: 2, RetryReason: "timeout"}},
		{`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"h"}}`, frame{Type: "disconnect", Reason: "refresh_requested"}},
		{` { "type" : "slash_commands" , "envelope_id" : "e2" , "payload" : [ ] } `, frame{Type: "slash_commands", EnvelopeID: "e2", Payload: json.RawMessage(`[ ]`)}},
		{`{}`, frame{}},
		{`{"Type":"hello"}`, frame{Type: "hello"}},
		{`{"type":"a","type":"b"}`, frame{Type: "b"}},
		{`{"type":"events_api","payload":null}`, frame{Type: "events_api", Payload: json.RawMessage(`null`)}},
	} {
		got, err := decodeFrame([]byte(tt.body))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decodeFrame(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
}

func TestDecodeFrameRejectsMalformedInput(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"type":`, `{"type":"hello"} {}`, `{"retry_attempt":"1"}`, `{"payload":{"a":}}`, `{"type":"x",}`} {
		if f, err := decodeFrame([]byte(body)); err == nil {
			t.Errorf("decodeFrame(%s) = %+v, want an error", body, f)
		}
	}
}

// FuzzDecodeFrame checks that decodeFrame never panics, and that a frame it reads encodes to
// JSON it reads back into a frame that encodes the same.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"envelope_id":"e1","payload":{"event":{"type":"message"}},"type":"events_api","retry_attempt":1}`))
	f.Add([]byte(`{"type":"hello","num_connections":1}`))
	f.Add([]byte(`{"type":"disconnect","reason":"link_disabled"}`))
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

func TestReadPostedReadsWhatADecoderReads(t *testing.T) {
	for _, body := range []string{
		`{"ok":true,"channel":"C1","ts":"1700000000.000100","message":{"type":"message","text":"hi","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"hi"}}]}}`,
		`{"ok":false,"error":"channel_not_found"}`,
		`{"ok":true,"ts":null,"warning":"superfluous_charset"}`,
		`{"OK":true,"ts":"1"}`,
		`{"ok":true,"ts":"1"} trailing`,
	} {
		got, err := readPosted([]byte(body))
		var want posted
		wantErr := json.NewDecoder(strings.NewReader(body)).Decode(&want)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Errorf("%s: readPosted = %+v (%v), a json.Decoder %+v (%v)", body, got, err, want, wantErr)
		}
	}
}

// FuzzReadPosted checks readPosted against a json.Decoder reading the first value.
func FuzzReadPosted(f *testing.F) {
	f.Add([]byte(`{"ok":true,"ts":"1.1","message":{"text":"x"}}`))
	f.Add([]byte(`{"ok":false,"error":"ratelimited"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readPosted(data)
		var want posted
		wantErr := json.NewDecoder(strings.NewReader(string(data))).Decode(&want)
		if (err == nil) != (wantErr == nil) || err == nil && got != want {
			t.Fatalf("readPosted = %+v (%v), a json.Decoder %+v (%v)", got, err, want, wantErr)
		}
	})
}

// benchCallback is an app_mention as Slack delivers it: the message's blocks, most of it, are
// read past.
const benchCallback = `{"token":"x","team_id":"T1","api_app_id":"A1","event":{"type":"app_mention","user":"U1","text":"<@UBOT> could you look into the thing we talked about earlier?","ts":"1700000000.000100","channel":"C1","event_ts":"1700000000.000100","team":"T1","blocks":[{"type":"rich_text","block_id":"b1","elements":[{"type":"rich_text_section","elements":[{"type":"user","user_id":"UBOT"},{"type":"text","text":" could you look into the thing we talked about earlier?"}]}]}]},"type":"event_callback","event_id":"Ev0000000001","event_time":1700000000,"authorizations":[{"enterprise_id":null,"team_id":"T1","user_id":"UBOT","is_bot":true,"is_enterprise_install":false}],"is_ext_shared_channel":false,"event_context":"4-eyJldCI6ImFwcF9tZW50aW9uIn0"}`

// BenchmarkDecodeFrame decodes one Socket Mode envelope carrying an app_mention: once per
// message.
//
//	go test -run '^$' -bench 'DecodeFrame|DecodeCallback' -benchmem ./adapters/slack/
func BenchmarkDecodeFrame(b *testing.B) {
	data := []byte(`{"envelope_id":"d2c5b3a1-0000-4000-8000-000000000001","payload":` + benchCallback + `,"type":"events_api","accepts_response_payload":false,"retry_attempt":0,"retry_reason":""}`)
	b.ReportAllocs()
	for b.Loop() {
		if f, err := decodeFrame(data); err != nil || f.Type != "events_api" {
			b.Fatal(f, err)
		}
	}
}

// BenchmarkDecodeCallback decodes the Events API payload of an app_mention: once per message.
func BenchmarkDecodeCallback(b *testing.B) {
	data := []byte(benchCallback)
	b.ReportAllocs()
	for b.Loop() {
		if _, ev, err := decodeCallback(data); err != nil || ev.Type != "app_mention" {
			b.Fatal(ev, err)
		}
	}
}
