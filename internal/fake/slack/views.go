package slackfake

import (
	"encoding/json"
	"fmt"
	"time"
)

// View is a modal opened with views.open.
type View struct {
	TriggerID string
	View      string // the view's JSON
}

// views are the modals views.open opened, and the trigger ids that open them.
type views struct {
	st *store
	// Guarded by st.mu.
	triggers map[string]time.Time // trigger id → issued at
	opened   []View
}

func newViews(st *store) *views { return &views{st: st, triggers: map[string]time.Time{}} }

// Views returns the modals opened, in order.
func (vs *views) Views() []View {
	vs.st.mu.Lock()
	defer vs.st.mu.Unlock()
	return append([]View(nil), vs.opened...)
}

// NewTriggerID issues a trigger id that views.open accepts for TriggerTTL.
func (vs *views) NewTriggerID() string {
	vs.st.mu.Lock()
	defer vs.st.mu.Unlock()
	n := vs.st.nextLocked()
	id := fmt.Sprintf("%d.%d.fake%x", vs.st.tsClock, n, n*7919)
	vs.triggers[id] = time.Now()
	return id
}

// ExpireTriggers makes every trigger issued so far unusable.
func (vs *views) ExpireTriggers() {
	vs.st.mu.Lock()
	defer vs.st.mu.Unlock()
	for id := range vs.triggers {
		vs.triggers[id] = time.Time{}
	}
}

func (vs *views) openView(p map[string]string) (map[string]any, *apiErr) {
	issued, ok := vs.triggers[p["trigger_id"]]
	switch {
	case !ok:
		return nil, slackErr("invalid_trigger_id")
	case time.Since(issued) > TriggerTTL:
		return nil, slackErr("expired_trigger_id")
	}
	var v struct {
		Type   string            `json:"type"`
		Title  json.RawMessage   `json:"title"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(p["view"]), &v); err != nil || v.Type != "modal" || len(v.Title) == 0 || len(v.Blocks) > 100 {
		return nil, slackErr("invalid_arguments")
	}
	delete(vs.triggers, p["trigger_id"]) // a trigger opens one view
	vs.opened = append(vs.opened, View{TriggerID: p["trigger_id"], View: p["view"]})
	return map[string]any{"view": map[string]any{"id": fmt.Sprintf("V%06d", vs.st.nextLocked()), "type": "modal"}}, nil
}
