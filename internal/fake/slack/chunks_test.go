package slackfake

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeChunksMalformed is the table of chunks arrays the fake refuses, and of some it takes.
func TestDecodeChunksMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"empty", "", ""},
		{"empty array", "[]", ""},
		{"not json", "[{", "invalid_chunks"},
		{"object not array", `{"type":"markdown_text"}`, "invalid_chunks"},
		{"array of strings", `["a"]`, "invalid_chunks"},
		{"no type", `[{"text":"a"}]`, "invalid_chunks"},
		{"unknown type", `[{"type":"video"}]`, "invalid_chunks"},
		{"markdown", `[{"type":"markdown_text","text":"a"}]`, ""},
		{"markdown too long", `[{"type":"markdown_text","text":"` + strings.Repeat("é", MaxStreamText+1) + `"}]`, "msg_too_long"},
		{"task", `[{"type":"task_update","id":"t","title":"T","status":"in_progress"}]`, ""},
		{"task bad status", `[{"type":"task_update","id":"t","title":"T","status":"done"}]`, "invalid_chunks"},
		{"task no id", `[{"type":"task_update","title":"T","status":"complete"}]`, "invalid_chunks"},
		{"task id not a string", `[{"type":"task_update","id":1,"title":"T","status":"complete"}]`, "invalid_chunks"},
		{"task details too long", `[{"type":"task_update","id":"t","title":"T","status":"complete","details":"` + strings.Repeat("d", MaxTaskText+1) + `"}]`, "invalid_chunks"},
		{"plan", `[{"type":"plan_update","title":"P"}]`, ""},
		{"plan no title", `[{"type":"plan_update"}]`, "invalid_chunks"},
		{"blocks", `[{"type":"blocks","blocks":[{"type":"divider"}]}]`, ""},
		{"blocks empty", `[{"type":"blocks","blocks":[]}]`, "invalid_blocks"},
		{"blocks not array", `[{"type":"blocks","blocks":"x"}]`, "invalid_blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e := decodeChunks(tc.raw)
			got := ""
			if e != nil {
				got = e.err
			}
			if got != tc.want {
				t.Fatalf("decodeChunks(%.60q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

// FuzzDecodeChunks checks decodeChunks never panics, and takes only JSON arrays.
func FuzzDecodeChunks(f *testing.F) {
	for _, s := range []string{"", "[]", `[{"type":"markdown_text","text":"a"}]`, `[{"type":"task_update","id":"t","title":"T","status":"complete","output":"o"}]`,
		`[{"type":"plan_update","title":"P"}]`, `[{"type":"blocks","blocks":[{}]}]`, `[{`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cs, e := decodeChunks(raw)
		if e == nil && raw != "" {
			var v []json.RawMessage
			if json.Unmarshal([]byte(raw), &v) != nil {
				t.Fatalf("took %q, which is not a JSON array", raw)
			}
			if len(cs) != len(v) {
				t.Fatalf("%d chunks from %d elements", len(cs), len(v))
			}
		}
	})
}
