package runs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

func TestEncodeEventIsJSONMarshal(t *testing.T) {
	full := Event{RunID: NewRunID(), Step: 7, Conv: conv.Key{Platform: "slack", Workspace: "T1", Chat: "C1", Thread: "1.2"},
		Kind: EventFinal, Text: "**answer** <&> \u2028 \"q\"", Tool: "search", Reason: "why", At: time.Date(2026, 12, 2, 1, 2, 3, 4, time.UTC),
		Attempt: 2, ReplyTo: "9", User: "T1:U1", Part: 3}
	withSubagent := full
	withSubagent.Subagent = &SubagentInfo{ID: "a", Name: "n", Structured: json.RawMessage(` {"x": 1} `)}
	withForm := full
	withForm.Form = &Form{ID: "f", Question: "q", ExpiresAt: full.At}
	farFuture := full
	farFuture.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ev := range []Event{{}, full, withSubagent, withForm, farFuture, {Kind: EventFailed, Reason: "x", At: time.Unix(1, 0).In(time.FixedZone("z", -3600))}} {
		got, gotErr := EncodeEvent(ev)
		want, wantErr := json.Marshal(ev)
		if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Errorf("EncodeEvent = %s (%v)\njson.Marshal = %s (%v)", got, gotErr, want, wantErr)
		}
	}
}

func FuzzEncodeEvent(f *testing.F) {
	f.Add("run", 1, "telegram", "", "42", "", "final", "text <&>", "", "", int64(0), 0, "", "", 0)
	f.Add("\xff", -1, "", "w", "", "t", "", "", "tool", "reason", int64(-62135596801), 5, "r", "u", -2)
	f.Fuzz(func(t *testing.T, runID string, step int, platform, workspace, chat, thread, kind, text, tool, reason string, sec int64, attempt int, replyTo, user string, part int) {
		ev := Event{RunID: runID, Step: step, Conv: conv.Key{Platform: platform, Workspace: workspace, Chat: chat, Thread: thread},
			Kind: EventKind(kind), Text: text, Tool: tool, Reason: reason, At: time.Unix(sec, int64(part)).UTC(),
			Attempt: attempt, ReplyTo: replyTo, User: user, Part: part}
		got, gotErr := EncodeEvent(ev)
		want, wantErr := json.Marshal(ev)
		if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Fatalf("EncodeEvent = %s (%v)\njson.Marshal = %s (%v)", got, gotErr, want, wantErr)
		}
	})
}
