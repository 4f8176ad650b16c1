package router

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// User-facing replies about approvals.
const (
	msgAdminsDecide   = "Only an admin can decide on this tool call."
	msgNotRequester   = "Only the person who asked can decide on this tool call."
	msgDecided        = "This tool call was already decided."
	msgApprovalExpiry = "This approval has expired; the call was not run."
)

// decisionFor is the decision an approval card's option stands for: 0 Approve, 1 Deny.
func decisionFor(option int) (string, bool) {
	switch option {
	case 0:
		return runs.DecisionApprove, true
	case 1:
		return runs.DecisionDeny, true
	}
	return "", false
}

// approvalWord reads a typed decision: the option's number, or the word.
func approvalWord(text string) (int, bool) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "1", "approve", "approved", "yes", "y", "allow":
		return 0, true
	case "2", "deny", "denied", "no", "n", "reject":
		return 1, true
	}
	return 0, false
}

// decisionKey claims an approval's decision for the first click, across processes.
func decisionKey(id string) string { return "decide:" + id }

// checkDecider returns the notice for a user who may not decide on an approval.
func checkDecider(c threads.Clarification, user string, admin bool) string {
	if c.AllowedUserID == threads.AnyoneMayAnswer {
		if !admin {
			return msgAdminsDecide
		}
		return ""
	}
	if c.AllowedUserID != user {
		return msgNotRequester
	}
	return ""
}

// decide queues the run that carries an approval's decision — once, whichever process gets
// the first click — and shows the outcome and who decided on the card.
func (apv approvals) decide(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, decision string, admin bool) (string, error) {
	first, err := apv.r.opt.Inbox.Claim(ctx, decisionKey(c.ID), max(time.Until(c.ExpiresAt), 0)+time.Hour)
	if err != nil {
		return "", err
	}
	if !first {
		apv.r.refuse(in.Conv.Platform, "expired", "refusing a second decision on an approval", in)
		return msgDecided, nil
	}
	if refusal, err := apv.deliverDecision(ctx, ch, in, c, form, decision, admin); refusal != "" || err != nil {
		if rerr := apv.r.opt.Inbox.Release(ctx, decisionKey(c.ID)); rerr != nil {
			apv.r.log.Warn("channels: releasing an approval's decision failed", "approval", c.ID, "err", rerr)
		}
		return refusal, err
	}
	if err := apv.r.opt.Inbox.Unmark(ctx, partialKey(c.ID)); err != nil {
		apv.r.log.Debug("channels: dropping partial answers failed", "approval", c.ID, "err", err)
	}
	who := in.Identity.DisplayName
	if who == "" {
		who = in.Identity.ChannelUserID
	}
	verdict, status, notice := "Approved by "+who+".", render.StatusDone, "Approved — the call runs now."
	switch decision {
	case runs.DecisionDeny:
		verdict, status, notice = "Denied by "+who+".", render.StatusFailed, "Denied — the call will not run."
	case decisionExpired:
		verdict, status, notice = "Expired: nobody decided in time.", render.StatusFailed, msgApprovalExpiry
	}
	card := render.Card{Title: "Approval", Status: status, Body: forms.JoinParagraphs(forms.ApprovalText(*form.Approval), "**"+verdict+"**")}
	if in.Interaction != nil {
		if ed, ok := ch.(channels.Editor); ok {
			if _, err := ed.Edit(ctx, in.Interaction.Message, channels.Message{Card: &card}); err == nil || errors.Is(err, channels.ErrNotModified) {
				if decision == decisionExpired {
					return msgApprovalExpiry, nil
				}
				return "", nil
			}
		}
	}
	return notice, nil
}

// decisionExpired is the decision a click after the approval's time carries: the lead then
// denies the call as expired.
const decisionExpired = "expired"

// approvalOpen returns the notice for an approval that cannot be decided now; expired is true
// when its time is up (a decision then reports the expiry to the run instead).
func (apv approvals) approvalOpen(in channels.Inbound, c threads.Clarification) (notice string, expired bool) {
	switch {
	case c.State == threads.StateAnswered:
		apv.r.refuse(in.Conv.Platform, "expired", "refusing a decision on an approval already decided", in)
		return msgDecided, false
	case c.State != threads.StatePending:
		apv.r.refuse(in.Conv.Platform, "expired", "refusing a decision on a withdrawn approval", in)
		return msgNotOpen, false
	case !apv.r.now().Before(c.ExpiresAt):
		return "", true
	}
	return "", false
}

// approvalClick takes a click on an approval card's buttons.
func (apv approvals) approvalClick(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, id render.ActionID, admin bool) (string, error) {
	notice, expired := apv.approvalOpen(in, c)
	if notice != "" {
		return notice, nil
	}
	if notice := checkDecider(c, in.Identity.ChannelUserID, admin); notice != "" {
		apv.r.refuse(in.Conv.Platform, "foreign_click", "refusing a decision from someone who may not decide", in)
		return notice, nil
	}
	if expired {
		return apv.decide(ctx, ch, in, c, form, decisionExpired, admin)
	}
	d, ok := decisionFor(id.Option)
	if id.Kind != render.ActionChoose || id.Field != 0 || !ok {
		return msgBadButton, nil
	}
	return apv.decide(ctx, ch, in, c, form, d, admin)
}

// typedDecision takes a typed reply while an approval waits: 1 or approve, 2 or deny.
func (apv approvals) typedDecision(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, admin bool) (string, error) {
	notice, expired := apv.approvalOpen(in, c)
	if notice != "" {
		return notice, nil
	}
	if notice := checkDecider(c, in.Identity.ChannelUserID, admin); notice != "" {
		return notice, nil
	}
	if expired {
		return apv.decide(ctx, ch, in, c, form, decisionExpired, admin)
	}
	opt, ok := approvalWord(in.Text)
	if !ok {
		return "A tool call waits for your decision: reply 1 to approve or 2 to deny.", nil
	}
	d, _ := decisionFor(opt)
	return apv.decide(ctx, ch, in, c, form, d, admin)
}

// deliverDecision hands the decision to the waiting call: for a call waiting inside its run,
// the decision is recorded where the run polls for it and the approval taken; otherwise a run
// carrying it is queued, which resumes the parked turn.
func (apv approvals) deliverDecision(ctx context.Context, ch channels.Channel, in channels.Inbound, c threads.Clarification, form runs.Form, decision string, admin bool) (string, error) {
	if form.Approval.Inline {
		ttl := max(time.Until(c.ExpiresAt), 0) + time.Hour
		if err := apv.r.opt.Inbox.Mark(ctx, runs.DecisionMark(c.ID), []byte(decision+"\n"+in.Identity.ChannelUserID), ttl); err != nil {
			return "", err
		}
		if _, err := apv.r.opt.Clarifications.Take(ctx, c.ID, in.Identity.ChannelUserID); err != nil && decision != decisionExpired {
			apv.r.log.Debug("channels: taking an inline approval after recording its decision", "approval", c.ID, "err", err)
		}
		return "", nil
	}
	env := apv.r.envelope(in, admin, runs.KindClarificationAnswer)
	if k, ok := conv.ParseKey(c.ConvKey); ok {
		env.Conv = k
	}
	env.ClarificationID, env.Text = c.ID, decision
	return apv.r.enqueue(ctx, ch, in, env)
}
