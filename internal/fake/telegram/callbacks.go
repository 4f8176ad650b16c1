package telegramfake

import "sync"

type callback struct {
	answered bool
	text     string
	alert    bool
}

// callbacks are the callback queries users made (PushCallback) and the bot's answers to them
// (answerCallbackQuery).
type callbacks struct {
	mu *sync.Mutex
	// byID is guarded by mu.
	byID map[string]*callback
}

// addLocked registers callback query id, not answered yet.
func (cbs *callbacks) addLocked(id string) { cbs.byID[id] = &callback{} }

// CallbackAnswer reports whether callback query id was answered and with what text.
func (cbs *callbacks) CallbackAnswer(queryID string) (text string, answered bool) {
	cbs.mu.Lock()
	defer cbs.mu.Unlock()
	if cb := cbs.byID[queryID]; cb != nil {
		return cb.text, cb.answered
	}
	return "", false
}

func (cbs *callbacks) answerCallbackQuery(p map[string]string) (any, *apiError) {
	cb := cbs.byID[p["callback_query_id"]]
	if cb == nil || cb.answered {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if utf16Len(p["text"]) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	cb.answered, cb.text, cb.alert = true, p["text"], p["show_alert"] == "true"
	return true, nil
}
