package lead

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/core/tools"
)

var _ runs.Handler = (*Team)(nil)

// pendingTurn is what a waiting run leaves in its clarification: the form it showed and the
// lead's unfinished turn, which the answer run completes with the answer as the tool's result.
type pendingTurn struct {
	Form   runs.Form     `json:"form"`
	CallID string        `json:"call_id"`
	Events []agent.Event `json:"events"`
	// Call is set when the run waits for an approval: the call the decision is about.
	Call *pendingCall `json:"call,omitempty"`
}

// User-facing reasons; short, no internals.
const (
	reasonExpired  = "That question has expired. Please send your request again."
	reasonAnswered = "That question was already answered."
	reasonNotYours = "That question was asked of someone else."
	reasonFailed   = "Sorry, something went wrong while working on this. Please try again."
	reasonTooLong  = "The answer ran past the model's length limit. Try asking for something shorter."
	reasonRefused  = "The model declined to answer this request."
	reasonNoTools  = "Tools are not configured here any more, so the call that waited for approval cannot run."
)

// HandleRun runs one verified envelope: a message starts a lead turn; a clarification answer
// completes the turn that asked. It emits the run's events and returns its outcome. A ctx that
// ends (cancel, lease lost, shutdown) stops the agents; the run's history is then left as it was.
func (t *Team) HandleRun(ctx context.Context, run *runs.Run) (runs.Outcome, error) {
	env := run.Envelope
	// One step reads whether this run already ended (a redelivery), and otherwise ensures the
	// thread and loads its history (the turns since the cached history's, see historyCache).
	st, history, release, err := t.history.begin(ctx, env.Conv.String(), env.RunID)
	if err != nil {
		return "", fmt.Errorf("lead: loading the run's thread: %w", err)
	}
	defer release()
	if st.Finished {
		return t.replayed(ctx, run, st)
	}
	p := t.places.of(env)
	r, outcome, done, err := t.resumeOf(ctx, run, p)
	if done {
		return outcome, err
	}
	history = append(history, r.completed...)
	for i := range history {
		if history[i].Seq != i { // numbered already unless a turn was completed onto it (a copy)
			history[i].Seq = i
		}
	}
	history = lastTurns(history, p.prof.HistoryTurns)
	return t.runLead(ctx, run, st.Thread, history, r, p)
}

// resume is what a run hands the lead agent: its input, the identity its tools act as, and the
// pending turn it completes (answer filled in), if it answers one.
type resume struct {
	in        agent.Input
	id        tools.Identity
	completed []agent.Event
	// notices tell the user about files of the message that could not be read; they lead the
	// answer.
	notices []string
}

// resumeOf reads what the run starts the lead with: a message, or the answer to a question or
// an approval's decision, which completes the turn that waited for it. done: the run ends here
// (with outcome, err) — the answer was refused, or an expiry found nothing left to do.
func (t *Team) resumeOf(ctx context.Context, run *runs.Run, p place) (r resume, outcome runs.Outcome, done bool, err error) {
	env := run.Envelope
	r = resume{in: agent.Input{Content: env.Text}, id: scoped(identityOf(env), p)}
	switch env.Kind {
	case runs.KindMessage:
		r.notices = t.files.prepare(ctx, env, p, &r.in)
		return r, "", false, nil
	case runs.KindClarificationAnswer:
	default:
		return r, "", true, runs.Permanent(fmt.Errorf("lead: run %s has kind %q, which the lead does not handle", env.RunID, env.Kind))
	}
	pc, expired, reason, err := t.questions.take(ctx, env)
	if err != nil {
		return r, "", true, err
	}
	if reason != "" {
		outcome, err := t.finish(ctx, run, runs.Event{Kind: runs.EventFailed, Reason: reason}, runs.OutcomeFailed, nil)
		return r, outcome, true, err
	}
	if pc == nil {
		// An expiry run whose approval was decided or withdrawn first: nothing to do.
		return r, runs.OutcomeCancelled, true, nil
	}
	if pc.Call == nil {
		r.completed = answered(pc, env.Text)
		r.in = agent.Input{Resume: true, Source: "clarification"}
		return r, "", false, nil
	}
	if t.opts.Tools == nil {
		outcome, err := t.finish(ctx, run, runs.Event{Kind: runs.EventFailed, Reason: reasonNoTools}, runs.OutcomeFailed, nil)
		return r, outcome, true, err
	}
	// The resumed turn works for whoever asked for the call, not whoever decided, in the
	// place's profile as it stands now.
	r.id = scoped(pc.Call.Identity, p)
	r.id.Admin, r.id.RunID = pc.Call.Admin, env.RunID
	r.completed = decided(pc, t.decision(ctx, env, pc, expired))
	r.in = agent.Input{Resume: true, Source: "approval"}
	return r, "", false, nil
}

// runLead runs the lead agent on the thread's history with r's input, then ends the run by
// what its turn came to.
func (t *Team) runLead(ctx context.Context, run *runs.Run, th threads.Thread, history []agent.Event, r resume, p place) (runs.Outcome, error) {
	env := run.Envelope
	seeded := len(history)
	var toolNames []string
	if t.opts.Tools != nil {
		toolNames = t.opts.Tools.Names(r.id, 0)
	}
	lead, err := t.newLead(th.SessionID+"."+env.RunID, p, modelIn(p, th.Settings.Model), history, toolNames)
	if err != nil {
		return "", runs.Permanent(fmt.Errorf("lead: creating the lead agent: %w", err))
	}
	rs := newRunState(t, run, lead, p)
	t.runs.Store(lead.ID(), rs)
	defer func() {
		_ = lead.Dispose(context.Background())
		t.runs.Delete(lead.ID())
		rs.close()
	}()
	rs.emit(runs.Event{Kind: runs.EventStarted})

	tctx := WithCaller(withAsked(context.Background(), rs.asked), callerOf(env))
	tctx = tools.WithApprover(tools.WithIdentity(tctx, r.id), rs.approver)
	if err := lead.SendInput(tctx, r.in); err != nil {
		return "", fmt.Errorf("lead: starting the turn: %w", err)
	}
	if err := lead.WhenIdle(ctx); err != nil {
		lead.Cancel("the run was stopped")
		_ = lead.WhenIdle(context.Background())
		rs.close()
		return runs.OutcomeCancelled, ctx.Err()
	}
	rs.close() // every progress and subagent event is out before the closing one
	return t.conclude(ctx, run, th, rs, lead.Session(), seeded, r)
}

// conclude ends the run by how the lead's turn ended: waiting for an answer or an approval,
// answered, failed for the model, or failed.
func (t *Team) conclude(ctx context.Context, run *runs.Run, th threads.Thread, rs *runState, sess *agent.Session, seeded int, r resume) (runs.Outcome, error) {
	completed := r.completed
	own := sess.Since(seeded)
	form, callID := rs.asked.get()
	approval, approvalCall := rs.asked.approvalGet()
	// No turn/end of its own (it cannot happen once idle) reads as a failure: Reason is empty.
	end, _ := sess.Last(agent.KindTurnEnd, seeded)
	var modelErr *agent.ModelError // the lead's own model call failed
	switch {
	case form != nil && end.Reason == agent.TurnCompleted:
		return t.waitForAnswer(ctx, run, append(completed, own...), answerText(own, end.Turn), *form, callID)
	case approval != nil && end.Reason == agent.TurnCompleted:
		return t.waitForApproval(ctx, run, append(completed, own...), answerText(own, end.Turn), *approval, approvalCall)
	case end.Reason == agent.TurnCompleted:
		text := answerText(own, end.Turn)
		if text == "" {
			t.log.Warn("lead: the lead finished without an answer", "run", run.Envelope.RunID)
			text = "_(The assistant finished without writing an answer.)_"
		}
		turn := historyTurn(completed, own)
		return t.finish(ctx, run, runs.Event{Kind: runs.EventFinal, Text: withNotices(r.notices, text)}, runs.OutcomeAnswered, &savedTurn{threadID: th.ID, events: turn})
	case end.Reason == agent.TurnError && errors.As(end.Err, &modelErr):
		return t.modelFailed(ctx, run, modelErr.Err)
	default:
		t.log.Warn("lead: the lead's turn did not complete", "run", run.Envelope.RunID, "reason", end.Reason, "error", end.Error)
		return t.finish(ctx, run, runs.Event{Kind: runs.EventFailed, Reason: failureReason(end.Reason)}, runs.OutcomeFailed, nil)
	}
}

// newLead creates a run's lead agent on its history, which the agent reads in place rather than
// copying it (it may be the history cache's, see historyReader.begin): nobody changes it afterwards.
func (t *Team) newLead(sessionID string, p place, model string, history []agent.Event, extra []string) (*agent.Agent, error) {
	names := t.places.builtins(p)
	if len(extra) > 0 {
		names = append(append(make([]string, 0, len(names)+len(extra)), names...), extra...)
	}
	return t.rt.Create(agent.CreateOptions{
		SessionID: sessionID,
		Seed:      history,
		ShareSeed: true,
		Options:   agent.Options{Model: model, System: []string{t.places.system(p)}, Tools: names, MaxSteps: t.opts.MaxSteps},
	})
}

// withNotices puts the notices about a message's files that could not be read ahead of the
// answer, in italics, one a line.
func withNotices(notices []string, text string) string {
	if len(notices) == 0 {
		return text
	}
	var b strings.Builder
	for _, n := range notices {
		b.WriteString("_" + n + "_\n")
	}
	return b.String() + "\n" + text
}

// replayed re-emits the closing event of a run that already finished (a redelivery after a
// crash between recording the end and acknowledging the run, or a try after the closing
// message could not be delivered). The result is recorded with the outcome in one step, so it
// is there.
func (t *Team) replayed(ctx context.Context, run *runs.Run, st threads.RunStart) (runs.Outcome, error) {
	var ev runs.Event
	if json.Unmarshal(st.Result, &ev) == nil && ev.Kind != "" {
		if err := run.Emit(ctx, ev); err != nil {
			return "", undelivered(ev, err)
		}
	}
	return runs.Outcome(st.Outcome), nil
}

// undelivered is the error of a run whose closing event could not be delivered (the platform
// down, refusing the bot, rate limiting past the delivery's own waits): an outage, so the run
// is tried again on the outage schedule, and each try re-emits the recorded event (replayed)
// without calling the model. A conversation the bot can no longer write to is not an error
// (the delivery gives its message up), so it is not tried again. It is not logged here: the
// pool logs the runs waiting on an outage together, as it does a model's.
func undelivered(ev runs.Event, err error) error {
	return &runs.UnavailableError{
		Err:    fmt.Errorf("lead: delivering the run's closing %s: %w", ev.Kind, err),
		Reason: "Sorry, the answer could not be delivered.",
	}
}

// savedTurn is the exchange a finished run adds to its thread's history.
type savedTurn struct {
	threadID string
	events   []json.RawMessage
}

// finish records the run's end — its turn appended to the history (when turn is set), the
// closing event (so a replay re-emits it) and the outcome, in one atomic step — and then emits
// the closing event. A run whose history could not be saved returns an error, so it is tried
// again; a failed record of a run without a turn is logged and the event still goes out. A
// closing event that could not be delivered returns an *runs.UnavailableError: the run is
// tried again, and the try re-emits the recorded event (or, if recording failed, runs anew).
func (t *Team) finish(ctx context.Context, run *runs.Run, ev runs.Event, out runs.Outcome, turn *savedTurn) (runs.Outcome, error) {
	id := run.Envelope.RunID
	result, err := json.Marshal(ev)
	if err != nil {
		// Recorded without it, a replay ends the run without re-emitting; the event still goes out now.
		t.log.Warn("lead: encoding the run's closing event failed", "run", id, "err", err)
		result = nil
	}
	end := threads.RunEnd{Outcome: string(out), Result: result}
	if turn != nil {
		end.ThreadID, end.Turn = turn.threadID, turn.events
	}
	first, err := t.store.History().FinishRun(ctx, run.Envelope.Conv.String(), id, end)
	switch {
	case errors.Is(err, threads.ErrStaleThread):
		// The user started over with `new` while this ran; the answer still goes out.
	case err != nil && turn != nil:
		return "", fmt.Errorf("lead: saving history: %w", err)
	case err != nil:
		t.log.Warn("lead: recording the run's end failed", "run", id, "err", err)
	case !first:
		t.log.Warn("lead: another attempt of the run recorded its end first; its history is kept", "run", id)
	}
	if err := run.Emit(ctx, ev); err != nil {
		return "", undelivered(ev, err)
	}
	return out, nil
}

// waitForAnswer stores the question with the unfinished turn and shows the form.
// events is the whole unfinished exchange: when the lead asks again while answering, the earlier
// question and its answer come first. text is what the lead wrote with the question.
func (t *Team) waitForAnswer(ctx context.Context, run *runs.Run, events []agent.Event, text string, form runs.Form, callID string) (runs.Outcome, error) {
	env := run.Envelope
	form.AllowedUserID = env.Identity.ChannelUserID
	p := pendingTurn{Form: form, CallID: callID, Events: events}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", runs.Permanent(fmt.Errorf("lead: encoding the question: %w", err))
	}
	c, err := t.store.Clarifications().Put(ctx, threads.Clarification{
		ID:            "q" + env.RunID,
		ConvKey:       env.Conv.String(),
		RunID:         env.RunID,
		AllowedUserID: env.Identity.ChannelUserID,
		Form:          raw,
		ExpiresAt:     expiry(t.opts.ClarificationTTL),
	})
	if err != nil {
		return "", fmt.Errorf("lead: storing the question: %w", err)
	}
	form.ID, form.ExpiresAt = c.ID, c.ExpiresAt
	return t.finish(ctx, run, runs.Event{Kind: runs.EventClarification, Form: &form, Text: text}, runs.OutcomeWaiting, nil)
}

func expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return time.Now().Add(ttl)
}

// answered is the pending turn completed with the answer as the question's tool result.
func answered(p *pendingTurn, answer string) []agent.Event {
	out := make([]agent.Event, 0, len(p.Events))
	for _, e := range p.Events {
		if e.Kind == agent.KindToolResult && e.CallID == p.CallID {
			e.Content = "The user answered:\n" + answer
			e.IsError, e.Code = false, ""
		}
		out = append(out, e)
	}
	return out
}

// historyTurn encodes the finished exchange as one history turn: the completed pending turn, if
// this run answered one, then this run's own events. Chunks are left out; they repeat the
// messages.
func historyTurn(completed, own []agent.Event) []json.RawMessage {
	var raw []json.RawMessage
	for _, part := range [2][]agent.Event{completed, own} {
		for i := range part {
			if part[i].Kind == agent.KindAssistantChunk {
				continue
			}
			// An Event holds strings, numbers and booleans only: it always encodes.
			b, _ := json.Marshal(&part[i])
			raw = append(raw, b)
		}
	}
	return raw
}

// answerText is what users may see of a turn: the assistant text of that turn's last message
// that has any. Allowlist: only assistant/message content of the given turn qualifies.
func answerText(events []agent.Event, turn int) string {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind == agent.KindAssistantMessage && e.Turn == turn && strings.TrimSpace(e.Content) != "" {
			return e.Content
		}
	}
	return ""
}

func failureReason(r agent.TurnEndReason) string {
	switch r {
	case agent.TurnMaxTokens:
		return reasonTooLong
	case agent.TurnRejected:
		return reasonRefused
	}
	return reasonFailed
}
