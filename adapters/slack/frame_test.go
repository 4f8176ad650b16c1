package slack

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

func TestDecodeFrameReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		`{"type":"hello","num_connections":1,"debug_info":{"host":"h","approximate_connection_time":18060},"connection_info":{"app_id":"A1"}}`,
		`{"envelope_id":"e1","payload":{"token":"x","team_id":"T1","event":{"type":"app_mention","text":"hi \u00e9"}},"type":"events_api","accepts_response_payload":false,"retry_attempt":2,"retry_reason":"timeout"}`,
		`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"h"}}`,
		` { "type" : "slash_commands" , "envelope_id" : "e2" , "payload" : [ ] } `,
		`{}`,
		// Left to encoding/json, which reads them all the same.
		`{"Type":"hello"}`,
		`{"type":"a","type":"b"}`,
		`{"type":"events_api","payload":null}`,
	} {
		if _, err := decodeFrame([]byte(body)); err != nil {
			t.Errorf("decodeFrame(%s): %v", body, err)
		}
		if err := jsonwire.SameAsUnmarshal([]byte(body), decodeFrame); err != nil {
			t.Error(err)
		}
	}
}

func TestDecodeFrameRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"type":`, `{"type":"hello"} {}`, `{"retry_attempt":"1"}`, `{"payload":{"a":}}`, `{"type":"x",}`} {
		if f, err := decodeFrame([]byte(body)); err == nil {
			t.Errorf("decodeFrame(%s) = %+v, want an error", body, f)
		}
	}
}

// FuzzDecodeFrame checks decodeFrame against encoding/json: the same frame, or an error from both.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"envelope_id":"e1","payload":{"event":{"type":"message"}},"type":"events_api","retry_attempt":1}`))
	f.Add([]byte(`{"type":"hello","num_connections":1}`))
	f.Add([]byte(`{"type":"disconnect","reason":"link_disabled"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 || strings.Count(string(data), "[") > 1000 {
			return
		}
		if err := jsonwire.SameAsUnmarshal(data, decodeFrame); err != nil {
			t.Fatal(err)
		}
	})
}

// fastCallback is readCallback on its own: ok is false where it gives up.
func fastCallback(data []byte) (cb callback, ok bool) {
	r := jsonwire.NewReader(data)
	readCallback(r, &cb)
	return cb, r.End()
}

func TestReadCallbackReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		`{"token":"x","team_id":"T1","api_app_id":"A1","event":{"type":"app_mention","user":"U1","text":"<@UBOT> hi","ts":"1.1","channel":"C1","event_ts":"1.1","blocks":[{"type":"rich_text","elements":[]}]},"type":"event_callback","event_id":"Ev1","event_time":1,"authorizations":[{"enterprise_id":null,"team_id":"T1","user_id":"UBOT","is_bot":true,"is_enterprise_install":false}],"is_ext_shared_channel":false}`,
		`{"type":"event_callback","team_id":"T1","enterprise_id":"E1","event":{"type":"message","channel_type":"im","channel":"D1","user":"U1","user_team":"T1","team":"T1","text":"hi","ts":"1.1","thread_ts":"1.0","bot_id":"B1","subtype":"file_share","files":[{"id":"F1","name":"a.txt","mimetype":"text/plain","size":3,"url_private":"https://f"},{}]}}`,
		`{"type":"event_callback","team_id":"T1","event":{"type":"assistant_thread_started","assistant_thread":{"user_id":"U1","channel_id":"D1","thread_ts":"1.1","context":{}}}}`,
		`{"type":"event_callback","team_id":"T1","event":{"type":"tokens_revoked","tokens":{"oauth":["U2"],"bot":["U1"]}},"authorizations":[]}`,
		`{"type":"url_verification","challenge":"c","token":"t"}`,
		`{"type":"event_callback","is_enterprise_install":true,"event":{"type":"app_uninstalled","files":[],"tokens":{"bot":[]}}}`,
	} {
		got, ok := fastCallback([]byte(body))
		if !ok {
			t.Errorf("readCallback gave up on %s", body)
			continue
		}
		var want callback
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nreadCallback = %+v\nencoding/json = %+v", body, got, want)
		}
	}
}

// FuzzReadCallback checks readCallback against encoding/json: what it reads, encoding/json
// reads the same.
func FuzzReadCallback(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> hi","ts":"1.1","files":[{"size":1}],"assistant_thread":{"user_id":"U"},"tokens":{"bot":["B"]}},"authorizations":[{"is_bot":true}]}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := fastCallback(data)
		if !ok {
			return
		}
		var want callback
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("readCallback read %+v from what encoding/json refuses: %v", got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("readCallback = %+v\nencoding/json = %+v", got, want)
		}
	})
}

// TestReadCallbackReadsTheFakesCallbacks: the payloads of the fake Slack, which follow Slack's
// documented examples (nulls included), take the one-pass path.
func TestReadCallbackReadsTheFakesCallbacks(t *testing.T) {
	fake := slackfake.New(t)
	msg, _ := fake.MessageCallback(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U1", Text: "hi"})
	pair, _ := fake.MentionPairCallbacks(slackfake.Msg{Channel: "C1", User: "U1", Text: slackfake.Mention() + " hi"})
	for _, cb := range []map[string]any{msg, pair[0], pair[1]} {
		body, err := json.Marshal(cb)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fastCallback(body); !ok {
			t.Errorf("readCallback gave up on the fake's %s", body)
		}
	}
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
