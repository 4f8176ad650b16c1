package slackfake

import (
	"encoding/json"
	"strconv"
)

// conversations are conversations.replies and conversations.history, read from chat's messages.
type conversations struct{ chat *chat }

func (cv *conversations) replies(p map[string]string) (map[string]any, *apiErr) {
	ch, ts := p["channel"], p["ts"]
	if cv.chat.lookupLocked(ch, ts) == nil {
		return nil, slackErr("thread_not_found")
	}
	var out []map[string]any
	for _, m := range cv.chat.byChannel[ch] {
		if m.Deleted || (m.TS != ts && m.ThreadTS != ts) {
			continue
		}
		if p["oldest"] != "" && tsBefore(m.TS, p["oldest"]) {
			continue
		}
		out = append(out, wireMessage(m, p["include_all_metadata"] == "true" || p["include_all_metadata"] == "1"))
	}
	return map[string]any{"messages": out, "has_more": false}, nil
}

// history is conversations.history: the channel's top-level messages (a thread's parent
// included, its replies not), newest first, from oldest on when given, up to limit (100 by
// default), with their metadata when include_all_metadata is set.
func (cv *conversations) history(p map[string]string) (map[string]any, *apiErr) {
	ch := p["channel"]
	if ch == "" {
		return nil, slackErr("channel_not_found")
	}
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 {
		limit = 100
	}
	msgs := cv.chat.byChannel[ch]
	out := []map[string]any{}
	for i := len(msgs) - 1; i >= 0 && len(out) < limit; i-- {
		m := msgs[i]
		if m.Deleted || m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		if p["oldest"] != "" && tsBefore(m.TS, p["oldest"]) {
			continue
		}
		out = append(out, wireMessage(m, p["include_all_metadata"] == "true" || p["include_all_metadata"] == "1"))
	}
	return map[string]any{"messages": out, "has_more": false}, nil
}

// wireMessage is m as conversations.history and conversations.replies return it, with its
// metadata when asked for (include_all_metadata).
func wireMessage(m *Message, metadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "thread_ts": m.ThreadTS, "user": m.User, "text": m.Text}
	if metadata && m.Metadata != "" {
		w["metadata"] = json.RawMessage(m.Metadata)
	}
	return w
}

// tsBefore reports whether Slack timestamp a ("seconds.micros") is earlier than b.
func tsBefore(a, b string) bool {
	af, _ := strconv.ParseFloat(a, 64)
	bf, _ := strconv.ParseFloat(b, 64)
	return af < bf
}
