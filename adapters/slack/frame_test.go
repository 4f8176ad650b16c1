package slack

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
		got, err := decodeFrame([]byte(body))
		var want frame
		wantErr := json.Unmarshal([]byte(body), &want)
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ndecodeFrame = %+v (%v)\nencoding/json = %+v (%v)", body, got, err, want, wantErr)
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
		got, err := decodeFrame(data)
		var want frame
		wantErr := json.Unmarshal(data, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeFrame error %v, encoding/json's %v", err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeFrame = %+v\nencoding/json = %+v", got, want)
		}
	})
}
