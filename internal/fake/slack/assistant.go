package slackfake

import "encoding/json"

// Status is an assistant.threads.setStatus call ("" clears the status), with the loading
// messages it rotates through.
type Status struct {
	Channel, ThreadTS, Status string
	LoadingMessages           []string
}

// assistant is the assistant.threads methods: the statuses set (setStatus), and the titles and
// suggested prompts, checked and otherwise only recorded with their calls.
type assistant struct {
	st *store
	// statuses are guarded by st.mu.
	statuses []Status
}

// Statuses returns the assistant thread statuses set, in order.
func (a *assistant) Statuses() []Status {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return append([]Status(nil), a.statuses...)
}

// MaxLoadingMessages is how many loading_messages assistant.threads.setStatus takes.
const MaxLoadingMessages = 10

// setStatus is assistant.threads.setStatus: channel_id and thread_ts are required, and
// loading_messages, when sent, is an array (a JSON array in a form body) of at most
// MaxLoadingMessages strings. https://docs.slack.dev/reference/methods/assistant.threads.setStatus
func (a *assistant) setStatus(p map[string]string) (map[string]any, *apiErr) {
	if p["channel_id"] == "" || p["thread_ts"] == "" {
		return nil, slackErr("invalid_arguments")
	}
	var loading []string
	if raw, ok := p["loading_messages"]; ok {
		if err := json.Unmarshal([]byte(raw), &loading); err != nil || len(loading) > MaxLoadingMessages {
			return nil, slackErr("invalid_arguments")
		}
	}
	a.statuses = append(a.statuses, Status{Channel: p["channel_id"], ThreadTS: p["thread_ts"], Status: p["status"], LoadingMessages: loading})
	return nil, nil
}

// setTitle is assistant.threads.setTitle: channel_id is required.
func (a *assistant) setTitle(p map[string]string) (map[string]any, *apiErr) {
	return recordOnly(p, "channel_id")
}

// setSuggestedPrompts is assistant.threads.setSuggestedPrompts: channel_id is required, and
// prompts is JSON.
func (a *assistant) setSuggestedPrompts(p map[string]string) (map[string]any, *apiErr) {
	if !json.Valid([]byte(p["prompts"])) {
		return nil, slackErr("invalid_arguments")
	}
	return recordOnly(p, "channel_id")
}

func recordOnly(p map[string]string, required string) (map[string]any, *apiErr) {
	if p[required] == "" {
		return nil, slackErr("channel_not_found")
	}
	return nil, nil
}
