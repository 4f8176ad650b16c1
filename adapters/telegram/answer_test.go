package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestDecodeAnswer(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		want answer // compared when ok
		bad  bool
	}{
		{name: "sent message", body: `{"ok":true,"result":{"message_id":7,"chat":{"id":1}}}`,
			want: answer{ok: true, result: []byte(`{"message_id":7,"chat":{"id":1}}`)}},
		{name: "updates", body: ` {"ok":true,"result":[{"update_id":1},{"update_id":2}]}` + "\n",
			want: answer{ok: true, result: []byte(`[{"update_id":1},{"update_id":2}]`)}},
		{name: "flood control", body: `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`,
			want: answer{code: 429, description: "Too Many Requests: retry after 3", params: &tgbotapi.ResponseParameters{RetryAfter: 3}}},
		{name: "migrated", body: `{"ok":false,"error_code":400,"description":"group chat was upgraded","parameters":{"migrate_to_chat_id":-1001234567890}}`,
			want: answer{code: 400, description: "group chat was upgraded", params: &tgbotapi.ResponseParameters{MigrateToChatID: -1001234567890}}},
		{name: "names in another case", body: `{"OK":true,"Result":1}`, want: answer{ok: true, result: []byte("1")}},
		{name: "a repeated field: the last wins", body: `{"ok":false,"ok":true,"result":1,"result":2}`, want: answer{ok: true, result: []byte("2")}},
		{name: "unknown fields skipped", body: `{"x":[1,{"y":null}],"ok":true,"result":true,"z":"w"}`, want: answer{ok: true, result: []byte("true")}},
		{name: "nulls leave fields as they are", body: `{"ok":null,"error_code":null,"description":null,"result":null}`, want: answer{result: []byte("null")}},
		{name: "null parameters", body: `{"parameters":{"retry_after":2},"parameters":null}`, want: answer{}},
		{name: "escaped strings", body: `{"description":"caf\u00e9 \"x\"","ok":false}`, want: answer{description: `café "x"`}},
		{name: "empty object", body: `{}`, want: answer{}},

		{name: "empty", body: ``, bad: true},
		{name: "HTML error page", body: `<html><body>502 Bad Gateway</body></html>`, bad: true},
		{name: "an array", body: `[1,2]`, bad: true},
		{name: "cut short", body: `{"ok":true,"result":{"message_id":7`, bad: true},
		{name: "trailing data", body: `{"ok":true} {"ok":false}`, bad: true},
		{name: "ok a string", body: `{"ok":"true"}`, bad: true},
		{name: "error_code a float", body: `{"error_code":400.0}`, bad: true},
		{name: "error_code too big", body: `{"error_code":99999999999999999999}`, bad: true},
		{name: "description a number", body: `{"description":5}`, bad: true},
		{name: "parameters an array", body: `{"parameters":[]}`, bad: true},
		{name: "retry_after a string", body: `{"parameters":{"retry_after":"3"}}`, bad: true},
		{name: "no colon", body: `{"ok" true}`, bad: true},
		{name: "trailing comma", body: `{"ok":true,}`, bad: true},
		{name: "bad literal", body: `{"ok":tru}`, bad: true},
		{name: "invalid result", body: `{"result":{"a":}}`, bad: true},
		{name: "too deep", body: `{"result":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeAnswer([]byte(c.body))
			if c.bad {
				if !errors.Is(err, errNotAnswer) {
					t.Fatalf("decodeAnswer(%q) = %+v, %v; want errNotAnswer", c.body, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeAnswer(%q): %v", c.body, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decodeAnswer(%q) = %+v, want %+v", c.body, got, c.want)
			}
		})
	}
}

// FuzzDecodeAnswer: decodeAnswer reads a body exactly as json.Unmarshal reads it into the
// library's APIResponse, and refuses what json.Unmarshal refuses.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"result":{"message_id":7}}`,
		`{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":3,"migrate_to_chat_id":-100}}`,
		`{"OK":true,"ok":null,"reSult":[1,"2",{"3":4}],"x":{}}`,
		`{"parameters":{"retry_after":1},"parameters":{"migrate_to_chat_id":2}}`,
		`{"description":"\ud83d\ude00 \u00e9\u0000","error_code":-0}`,
		`{"ſ":1,"oK":true}`,
		" \t\r\n{}\n",
		`{"error_code":1e2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAnswer(body)
		var want tgbotapi.APIResponse
		wantErr := json.Unmarshal(body, &want)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeAnswer(%q) error %v, json.Unmarshal error %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.ok != want.Ok || got.code != want.ErrorCode || got.description != want.Description ||
			!bytes.Equal(got.result, want.Result) || (got.result == nil) != (want.Result == nil) ||
			!reflect.DeepEqual(got.params, want.Parameters) {
			t.Fatalf("decodeAnswer(%q) = %+v, json.Unmarshal = %+v", body, got, want)
		}
	})
}

// FuzzSplitResult: the elements of a valid result are those json.Unmarshal finds.
func FuzzSplitResult(f *testing.F) {
	for _, s := range []string{`[]`, `[{"update_id":1}, {"update_id":2}]`, `null`, `[1,"2",[3],{"4":5},true,null]`, `{}`, `"x"`, `[ ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, res []byte) {
		if !json.Valid(res) {
			return // decodeAnswer hands over only valid results
		}
		res = bytes.TrimSpace(res) // as a slice of the answer, the value has no whitespace around it
		got, ok := splitResult(res)
		var want []json.RawMessage
		wantErr := json.Unmarshal(res, &want)
		if ok != (wantErr == nil) {
			t.Fatalf("splitResult(%q) ok = %v, json.Unmarshal error %v", res, ok, wantErr)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("splitResult(%q) = %d elements, want %d", res, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].raw, want[i]) {
				t.Fatalf("splitResult(%q)[%d] = %q, want %q", res, i, got[i].raw, want[i])
			}
		}
	})
}
