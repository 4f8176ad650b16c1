package router

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

var peopleForm = runs.Form{Question: "How many people?", Fields: []runs.FormField{
	{ID: "people", Label: "People", Kind: runs.FieldChoice, Options: []string{"2", "4", "6"}, Required: true},
}}

var dinnerForm = runs.Form{Question: "Dinner details?", Fields: []runs.FormField{
	{ID: "people", Label: "People", Kind: runs.FieldChoice, Options: []string{"2", "4"}, Required: true},
	{ID: "extras", Label: "Extras", Kind: runs.FieldMultiChoice, Options: []string{"Wine", "Cake", "Flowers"}},
	{ID: "note", Label: "Note", Kind: runs.FieldText},
}}

func click(t *testing.T, key render.Key, id render.ActionID) string {
	t.Helper()
	s, err := render.EncodeAction(key, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clickIn(conv conv.Key, who, data string) channels.Inbound {
	return channels.Inbound{Conv: conv, Identity: user(who), AddressesBot: true, MessageID: "card",
		Interaction: &channels.Interaction{ID: "cb", Data: data, Message: channels.MessageRef{Conv: conv, IDs: []string{"card"}}}}
}

// TestClarificationAnsweredByClick proves a click on an option queues the answer run for the
// right question with the answer in words, and that a click by someone else, a forged or
// altered id, and a click after expiry are refused privately to the clicker, queueing nothing.
func TestClarificationAnsweredByClick(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	conv := conv.Key{Platform: "test", Chat: "group", Workspace: "w"}
	qid := putQuestion(t, h, conv, "u1", peopleForm)
	choose := func(opt int) string {
		return click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: qid, Option: opt})
	}
	otherKey, _ := render.NewKey([]byte("another-key-0123456789abcdefghij"))
	forged := click(t, otherKey, render.ActionID{Kind: render.ActionChoose, Token: qid, Option: 1})
	altered := []byte(choose(1))
	altered[5] = '2' // option 1 → option 2 without re-signing

	refusals := []struct {
		name, who, data, want, counted string
	}{
		{"foreign click", "u2", choose(1), msgForeign, "refused/test/foreign_click"},
		{"forged id", "u1", forged, msgBadButton, "refused/test/forged_action"},
		{"altered id", "u1", string(altered), msgBadButton, "refused/test/forged_action"},
		{"unknown question", "u1", click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: "qnope"}), msgNotOpen, "refused/test/expired"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			before, notices := len(h.ch.Sent()), len(h.ch.AllNotices())
			h.send(clickIn(conv, tc.who, tc.data))
			got := h.ch.AllNotices()[notices:]
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("private notices %q, want [%q]", got, tc.want)
			}
			if len(h.ch.Sent()) != before {
				t.Error("a refusal was posted in the chat")
			}
			if h.metrics.Get(tc.counted) == 0 {
				t.Errorf("%s not counted", tc.counted)
			}
		})
	}

	t.Run("answer", func(t *testing.T) {
		notices := len(h.ch.AllNotices())
		h.send(clickIn(conv, "u1", choose(1)))
		env := h.nextRun()
		if env.Kind != runs.KindClarificationAnswer || env.ClarificationID != qid || env.Text != "People: 4" || env.Identity.ChannelUserID != "u1" {
			t.Errorf("answer run %+v", env)
		}
		if got := h.ch.AllNotices()[notices:]; len(got) != 1 || got[0] != "" {
			t.Errorf("the click was answered with %q, want one empty answer", got)
		}
		h.noRunBefore(dm("marker"))
	})

	t.Run("expired", func(t *testing.T) {
		q2 := putQuestion(t, h, conv, "u1", peopleForm)
		h.clock.Advance(2 * time.Hour)
		defer h.clock.Advance(-2 * time.Hour)
		notices := len(h.ch.AllNotices())
		h.send(clickIn(conv, "u1", click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: q2})))
		if got := h.ch.AllNotices()[notices:]; len(got) != 1 || got[0] != msgExpired {
			t.Errorf("notices %q, want [%q]", got, msgExpired)
		}
		h.noRunBefore(dm("marker"))
	})
}

// TestClarificationMultiFieldByClicks proves a form asked one field at a time keeps partial
// answers: a choice, toggles and Done, then a skip complete it, the card is edited to each next
// field, and one answer run carries every field.
func TestClarificationMultiFieldByClicks(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	conv := dm("multi")
	qid := putQuestion(t, h, conv, "u1", dinnerForm)
	act := func(kind render.ActionKind, field, opt int) {
		t.Helper()
		h.send(clickIn(conv, "u1", click(t, testActionKey, render.ActionID{Kind: kind, Token: qid, Field: field, Option: opt})))
	}
	act(render.ActionChoose, 0, 1)
	if v := h.ch.Visible(); len(v) == 0 || !strings.Contains(v[len(v)-1], "Extras") {
		t.Errorf("after field 1 the card shows %q, want field 2", v)
	}
	act(render.ActionToggle, 1, 0)
	act(render.ActionToggle, 1, 2)
	act(render.ActionToggle, 1, 0) // untick Wine
	act(render.ActionSubmit, 1, 0)
	act(render.ActionSkip, 2, 0)
	env := h.nextRun()
	want := "People: 4\nExtras: Flowers\nNote: (skipped)"
	if env.Kind != runs.KindClarificationAnswer || env.Text != want {
		t.Errorf("answer %q (%s), want %q", env.Text, env.Kind, want)
	}
	for _, n := range h.ch.AllNotices() {
		if n != "" {
			t.Errorf("unexpected notice %q", n)
		}
	}
}

// TestClarificationModalSubmit proves a native form (modal) submission answers every field at
// once, and that the open-form button opens the form where the platform can.
func TestClarificationModalSubmit(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	conv := dm("modal")
	qid := putQuestion(t, h, conv, "u1", dinnerForm)
	h.send(clickIn(conv, "u1", click(t, testActionKey, render.ActionID{Kind: render.ActionOpenForm, Token: qid})))
	if len(h.ch.Opened) != 1 || h.ch.Opened[0].Token != qid || len(h.ch.Opened[0].Fields) != 3 {
		t.Fatalf("opened forms %+v", h.ch.Opened)
	}
	in := clickIn(conv, "u1", click(t, testActionKey, render.ActionID{Kind: render.ActionSubmit, Token: qid}))
	in.Interaction.Values = map[string][]string{
		"people": {click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: qid, Field: 0, Option: 0})},
		"extras": {
			click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: qid, Field: 1, Option: 1}),
			click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: qid, Field: 1, Option: 0}),
		},
		"note": {"  by the window "},
	}
	h.send(in)
	env := h.nextRun()
	if want := "People: 2\nExtras: Wine, Cake\nNote: by the window"; env.Text != want {
		t.Errorf("answer %q, want %q", env.Text, want)
	}
}

// TestClarificationAnsweredByTypingNumber proves typed replies answer the pending question:
// an option number, several numbers for a multi-choice field, and free text where allowed; a
// number out of range gets a short help and queues nothing.
func TestClarificationAnsweredByTypingNumber(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	type step struct{ text, wantReply string }
	cases := []struct {
		name  string
		form  runs.Form
		steps []step
		want  string
	}{
		{name: "one number", form: peopleForm, steps: []step{{text: "2"}}, want: "People: 4"},
		{name: "out of range then right", form: peopleForm, steps: []step{{text: "9", wantReply: "number from 1 to 3"}, {text: " 3 "}}, want: "People: 6"},
		{name: "several fields, numbers and text", form: dinnerForm, steps: []step{
			{text: "1", wantReply: "Extras"}, {text: "1, 3", wantReply: "Note"}, {text: "no nuts please"},
		}, want: "People: 2\nExtras: Wine, Flowers\nNote: no nuts please"},
		{name: "skip an optional field", form: dinnerForm, steps: []step{{text: "2"}, {text: "skip"}, {text: "skip"}},
			want: "People: 4\nExtras: (skipped)\nNote: (skipped)"},
		{name: "free text when allowed", form: runs.Form{Question: "Size?", AllowFreeText: true, Fields: peopleForm.Fields},
			steps: []step{{text: "about five of us"}}, want: "about five of us"},
		{name: "no fields", form: runs.Form{Question: "Anything else?", AllowFreeText: true}, steps: []step{{text: "no, thanks"}}, want: "no, thanks"},
		{name: "confirm by word", form: runs.Form{Question: "Book it?", Fields: []runs.FormField{{ID: "ok", Label: "Book", Kind: runs.FieldConfirm, Required: true}}},
			steps: []step{{text: "yes"}}, want: "Book: Yes"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := dm("typed" + string(rune('a'+i)))
			qid := putQuestion(t, h, conv, "u1", tc.form)
			for _, s := range tc.steps {
				before := len(h.ch.Sent())
				h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: s.text, Direct: true})
				sent := h.ch.Sent()[before:]
				if s.wantReply != "" && (len(sent) != 1 || !strings.Contains(sent[0].Text, s.wantReply)) {
					t.Errorf("after %q: replies %+v, want one containing %q", s.text, sent, s.wantReply)
				}
			}
			env := h.nextRun()
			if env.Kind != runs.KindClarificationAnswer || env.ClarificationID != qid || env.Text != tc.want {
				t.Errorf("answer run %s %q for %s, want %q for %s", env.Kind, env.Text, env.ClarificationID, tc.want, qid)
			}
		})
	}
}

// TestCancelWithdrawsTheOpenQuestion proves /cancel withdraws a question the bot waits on: the
// reply says so, its button no longer answers it, and a typed reply becomes a new message run.
func TestCancelWithdrawsTheOpenQuestion(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	conv := dm("cancelq")
	qid := putQuestion(t, h, conv, "u1", peopleForm)
	before := len(h.ch.Sent())
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "/cancel", Direct: true})
	if sent := h.ch.Sent()[before:]; len(sent) != 1 || !strings.Contains(sent[0].Text, "Withdrew the open question") {
		t.Fatalf("replies %+v, want one saying the question was withdrawn", sent)
	}
	if _, err := h.store.Clars().Take(h.ctx, qid, "u1"); !errors.Is(err, threads.ErrClarificationCancelled) {
		t.Errorf("answering the withdrawn question: %v, want ErrClarificationCancelled", err)
	}
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "2", Direct: true})
	if env := h.nextRun(); env.Kind != runs.KindMessage || env.Text != "2" {
		t.Errorf("typed reply became %s %q, want a message run", env.Kind, env.Text)
	}
	before = len(h.ch.Sent())
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "/cancel", Direct: true})
	if sent := h.ch.Sent()[before:]; len(sent) != 1 || strings.Contains(sent[0].Text, "question") {
		t.Errorf("second /cancel replied %+v, want no question mentioned", sent)
	}
}
