package modelserver

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeFastReadsTheLeadsRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/lead_request.json")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeFast(body)
	if !ok {
		t.Fatal("decodeFast gave up on the lead's own request")
	}
	want, err := decodeSlow(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeFast = %+v\nencoding/json = %+v", got, want)
	}
}

func TestDecodeFastReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		streamBody,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "a\u00e9\n\"b\"" } ] } `,
		`{"model":"m","messages":[{"role":"assistant","content":"","reasoning_content":"r"},{"role":"tool","content":"ok","tool_call_id":"c1","name":"n"}]}`,
		`{"model":"m","messages":[],"tools":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","extra":{"a":[1,2,{"b":null}]}}],"unknown":true}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}}}}],"tool_choice":"auto"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":false,"stream_options":{"include_usage":true},"max_tokens":-3,"max_completion_tokens":0}`,
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff utf-8\"}]}",
		`{}`,
		`{"model":"m","messages":[{"role":"user","content":null,"name":null}],"tools":null,"stream":null,"stream_options":null}`,
	} {
		got, ok := decodeFast([]byte(body))
		if !ok {
			t.Errorf("decodeFast gave up on %s", body)
			continue
		}
		var want struct {
			Request
			Messages []wireMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got.Model != want.Model || len(got.Messages) != len(want.Messages) || !reflect.DeepEqual(got.Tools, want.Tools) ||
			string(got.ToolChoice) != string(want.ToolChoice) || got.Stream != want.Stream || !reflect.DeepEqual(got.StreamOptions, want.StreamOptions) ||
			got.MaxTokens != want.MaxTokens || got.MaxCompletionTokens != want.MaxCompletionTokens {
			t.Errorf("%s:\ndecodeFast = %+v\nencoding/json = %+v", body, got, want)
		}
		for i := range got.Messages {
			if m, err := want.Messages[i].message(); err != nil || !reflect.DeepEqual(got.Messages[i], m) {
				t.Errorf("%s: message %d: decodeFast = %+v, encoding/json = %+v (%v)", body, i, got.Messages[i], m, err)
			}
		}
	}
}

// TestDecodeFastGivesUp lists what decodeFast leaves to encoding/json: malformed bodies (which
// encoding/json then reports), and well-formed ones it does not read exactly as encoding/json.
func TestDecodeFastGivesUp(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"empty", ``},
		{"not an object", `[1,2]`},
		{"truncated", `{"model":"m","messages":[`},
		{"trailing data", `{"model":"m","messages":[]} {}`},
		{"missing colon", `{"model" "m"}`},
		{"missing comma", `{"model":"m" "stream":true}`},
		{"trailing comma", `{"model":"m",}`},
		{"key in another case", `{"Model":"m","messages":[]}`},
		{"message key in another case", `{"model":"m","messages":[{"ROLE":"user","content":"x"}]}`},
		{"key twice", `{"model":"a","model":"b","messages":[]}`},
		{"null tool_choice (kept raw)", `{"model":"m","messages":[],"tool_choice":null}`},
		{"null parameters (kept raw)", `{"model":"m","messages":[],"tools":[{"function":{"parameters":null}}]}`},
		{"content parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`},
		{"tool calls", `{"model":"m","messages":[{"role":"assistant","tool_calls":[]}]}`},
		{"content is a number", `{"model":"m","messages":[{"role":"user","content":5}]}`},
		{"stream is a string", `{"model":"m","stream":"yes","messages":[]}`},
		{"stream is truthy", `{"model":"m","stream":truex,"messages":[]}`},
		{"max_tokens with a fraction", `{"model":"m","max_tokens":1.5,"messages":[]}`},
		{"max_tokens too large", `{"model":"m","max_tokens":99999999999999999999,"messages":[]}`},
		{"bad escape", `{"model":"\q","messages":[]}`},
		{"unknown key with a bad value", `{"model":"m","x":[1,,2],"messages":[]}`},
		{"tool function not an object", `{"model":"m","messages":[],"tools":[{"type":"function","function":"f"}]}`},
		{"nesting past encoding/json's limit", `{"model":"m","messages":[],"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if req, ok := decodeFast([]byte(tt.body)); ok {
				t.Fatalf("decodeFast read %+v; it should leave this body to encoding/json", req)
			}
		})
	}
}

// FuzzDecodeFast checks that whatever decodeFast reads, encoding/json reads the same, with the
// same verdict of the checks after it.
func FuzzDecodeFast(f *testing.F) {
	f.Add([]byte(streamBody))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x","name":"n"}],"tools":[],"tool_choice":{"type":"none"}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"\ud83d\ude00 \ud800"}],"stream_options":{}}`))
	f.Add([]byte(`{"model":"","messages":[{"role":"robot","content":""}]}`))
	if body, err := os.ReadFile("testdata/lead_request.json"); err == nil {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeFast(body)
		if !ok {
			return
		}
		var w struct {
			Request
			Messages []wireMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatalf("decodeFast read %+v from a body encoding/json refuses: %v", got, err)
		}
		fast, fastErr := decodeRequest(body)
		slow, slowErr := decodeSlow(body)
		if (fastErr == nil) != (slowErr == nil) || fastErr != nil && fastErr.Error() != slowErr.Error() {
			t.Fatalf("decodeRequest's error %v, encoding/json's %v", fastErr, slowErr)
		}
		if fastErr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeFast = %+v\nencoding/json = %+v", fast, slow)
		}
	})
}
