package router

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

func approvalForm(adminOnly, inline bool) runs.Form {
	return runs.Form{Question: "Allow the tool fake__echo to run?", Fields: []runs.FormField{
		{ID: "decision", Label: "Decision", Kind: runs.FieldChoice, Options: []string{"Approve", "Deny"}, Required: true},
	}, Approval: &runs.Approval{Name: "fake__echo", Server: "fake", Tool: "echo", Requester: "User u1", Args: "{\n  \"message\": \"hi\"\n}", AdminOnly: adminOnly, Inline: inline}}
}

func putApproval(t *testing.T, h *harness, c conv.Key, allowed string, form runs.Form) string {
	t.Helper()
	runID := runs.NewRunID()
	raw, err := json.Marshal(map[string]any{"form": form, "call_id": "call-1", "events": []any{}, "call": map[string]any{"name": "fake__echo"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.store.Clars().Put(h.ctx, threads.Clarification{ID: "a" + runID, ConvKey: c.String(), RunID: runID,
		AllowedUserID: allowed, Form: raw, ExpiresAt: h.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

func decideClick(t *testing.T, id string, option int) string {
	return click(t, testActionKey, render.ActionID{Kind: render.ActionChoose, Token: id, Option: option})
}

// TestApprovalDecidedOnceAcrossProcesses: two processes' routers (one store) get a click each at
// the same moment — Approve on one, Deny on the other: exactly one decision run is queued, the
// other clicker is told privately that it was decided already.
func TestApprovalDecidedOnceAcrossProcesses(t *testing.T) {
	h := newHarness(t)
	other, err := New(h.router.opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close(h.ctx) }()
	c := conv.Key{Platform: "test", Chat: "group", Workspace: "w"}
	id := putApproval(t, h, c, "u1", approvalForm(false, false))
	ch1, ch2 := newFakeChannel("test"), newFakeChannel("test")
	var wg sync.WaitGroup
	for i, r := range []*Router{h.router, other} {
		ch := []*fakeChannel{ch1, ch2}[i]
		wg.Go(func() {
			if err := r.HandleInbound(h.ctx, ch, clickIn(c, "u1", decideClick(t, id, i))); err != nil {
				t.Errorf("click %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	ids, err := h.queue.QueuedRuns(h.ctx, c)
	if err != nil || len(ids) != 1 {
		t.Fatalf("queued %v (%v), want exactly one decision run", ids, err)
	}
	notices := strings.Join(append(ch1.AllNotices(), ch2.AllNotices()...), "|")
	if !strings.Contains(notices, msgDecided) {
		t.Errorf("the second clicker was not told: %q", notices)
	}
	if strings.Count(notices, "Approved — ")+strings.Count(notices, "Denied — ") != 1 {
		t.Errorf("notices %q, want one decision and one refusal", notices)
	}
}

// TestApprovalWhoMayDecide: only the requester decides, or only an admin with approval: admin;
// anyone else is refused privately and nothing is queued; a typed 1 or 2 decides in a chat
// without buttons, and other text is told how to answer.
func TestApprovalWhoMayDecide(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	c := conv.Key{Platform: "test", Chat: "g2", Workspace: "w"}

	id := putApproval(t, h, c, "u1", approvalForm(false, false))
	h.send(clickIn(c, "u2", decideClick(t, id, 0)))
	if got := h.ch.AllNotices(); len(got) == 0 || got[len(got)-1] != msgNotRequester {
		t.Errorf("a stranger's click: notices %q", got)
	}
	if n := h.queued(c); n != 0 {
		t.Errorf("a stranger's click queued %d runs", n)
	}

	adminID := putApproval(t, h, c, threads.AnyoneMayAnswer, approvalForm(true, false))
	h.send(clickIn(c, "u1", decideClick(t, adminID, 0)))
	if got := h.ch.AllNotices(); got[len(got)-1] != msgAdminsDecide {
		t.Errorf("the requester's click on an admin approval: notices %q", got)
	}
	if n := h.queued(c); n != 0 {
		t.Errorf("the requester's click on an admin approval queued %d runs", n)
	}
	h.send(clickIn(c, "admin1", decideClick(t, adminID, 1)))
	if env := h.nextRun(); env.Text != runs.DecisionDeny || env.Identity.ChannelUserID != "admin1" {
		t.Errorf("the admin's decision run %+v", env)
	}

	typed := conv.Key{Platform: "test", Chat: "typed"}
	putApproval(t, h, typed, "u1", approvalForm(false, false))
	h.send(channels.Inbound{Conv: typed, Identity: user("u1"), Text: "maybe", Direct: true})
	if got := h.ch.LastSent(); !strings.Contains(got, "reply 1 to approve or 2 to deny") {
		t.Errorf("unclear typed answer got %q", got)
	}
	h.send(channels.Inbound{Conv: typed, Identity: user("u1"), Text: "1", Direct: true})
	if env := h.nextRun(); env.Text != runs.DecisionApprove || env.Conv != typed {
		t.Errorf("typed 1 queued %+v", env)
	}
}

// TestInlineApprovalRecordsTheDecision: for a call waiting inside its run, a click records the
// decision (and who made it) where the run polls, takes the approval, and queues no run.
func TestInlineApprovalRecordsTheDecision(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	c := conv.Key{Platform: "test", Chat: "inline"}
	id := putApproval(t, h, c, "u1", approvalForm(false, true))
	h.send(clickIn(c, "u1", decideClick(t, id, 0)))
	v, found, err := h.store.Marked(h.ctx, runs.DecisionMark(id))
	if err != nil || !found || string(v) != runs.DecisionApprove+"\nu1" {
		t.Fatalf("decision mark = %q, %v, %v", v, found, err)
	}
	if rec, err := h.store.Clars().Get(h.ctx, id); err != nil || rec.State != threads.StateAnswered {
		t.Errorf("approval state = %+v, %v; want answered", rec, err)
	}
	if n := h.queued(c); n != 0 {
		t.Errorf("an inline decision queued %d runs", n)
	}
}

// TestApprovalCardShowsTheCall: the card names the tool, its server, who asked, the arguments
// and who decides, with Approve and Deny as the forms.Choices.
func TestApprovalCardShowsTheCall(t *testing.T) {
	f := approvalForm(true, false)
	f.ID = "a01TEST"
	card := forms.Card(f, "I need to echo.", 0, forms.Partial{}, "r1")
	if card.Title != "Approval needed" || card.Form == nil || len(card.Form.Fields) != 1 {
		t.Fatalf("card %+v", card)
	}
	for _, want := range []string{"I need to echo.", "`fake__echo`", "server `fake`", "User u1", `"message": "hi"`, "An admin decides."} {
		if !strings.Contains(card.Body, want) {
			t.Errorf("card body lacks %q:\n%s", want, card.Body)
		}
	}
	if got := card.Form.Fields[0].Options; len(got) != 2 || got[0] != "Approve" || got[1] != "Deny" {
		t.Errorf("forms.Choices %v", got)
	}
	f.Approval.Args = "```evil```"
	if strings.Count(forms.Card(f, "", 0, forms.Partial{}, "r1").Body, "```") != 2 {
		t.Error("arguments can close the card's code block")
	}
}
