package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// StepStream holds the JSON MessageRef of the run's stream message, once one is started: a
// replay ends that stream and edits the message instead of posting another.
const StepStream = "stream"

// Plan titles of a stream: while it works (with subagents once the first is delegated), and
// once it stopped.
const (
	planStarted = "Working on it…"
	planWorking = "Working with subagents…"
	planDone    = "Done"
)

// maxTaskOutput bounds a task's output (Slack allows 256 characters).
const maxTaskOutput = 256

// runStream is a run's stream as delivery last drove it. The text it shows is the prefix
// c.answer[:sent] of the run's answer so far.
type runStream struct {
	ref    channels.MessageRef
	sent   int                   // bytes of c.answer the platform took
	tasks  []channels.StreamTask // task updates not sent yet
	open   []channels.StreamTask // tasks whose latest status is in progress, in the order they started
	plan   string                // the plan title last sent
	broken bool                  // the platform refused mid-stream: post-and-edit in ref from here
}

// WantsAnswerDeltas reports whether the conversation's channel can stream answers
// (runs.AnswerDeltaSink): the lead emits answer deltas only then.
func (d *Delivery) WantsAnswerDeltas(k conv.Key) bool {
	s, ok := d.opt.Channels[k.Platform].(channels.Streamer)
	return ok && s.CanStream(channels.Target{Conv: k})
}

// streams shows an answer as it is written where the channel streams (channels.Streamer): the
// stream's start, its appends and tasks, its stop, and the fall back to post-and-edit.
type streams struct{ d *Delivery }

var _ runs.AnswerDeltaSink = (*Delivery)(nil)

// streamer is ch's Streamer when c may stream: the channel has one, the conversation allows it,
// and neither a refusal nor an earlier attempt's stream ruled it out for this run.
func (sm streams) streamer(ch channels.Channel, c *runCard) (channels.Streamer, bool) {
	s, ok := ch.(channels.Streamer)
	if !ok || c.noStream || !s.CanStream(c.target()) {
		return nil, false
	}
	return s, true
}

func (c *runCard) target() channels.Target {
	return channels.Target{Conv: c.conv, ReplyTo: c.replyTo, User: c.user}
}

// streaming reports whether c's stream is up and healthy.
func (c *runCard) streaming() bool {
	return c.stream != nil && !c.stream.broken && c.stream.ref.ID() != ""
}

// answerDelta adds an answer delta to c.answer and shows it: appended to the stream (started
// now if need be, throttled per StreamEvery), or, once the stream is refused, in the working
// card edited in place.
func (sm streams) answerDelta(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) {
	if ev.Text == "" {
		return
	}
	if ev.Part != c.part && c.answer != "" {
		c.answer += "\n\n"
		c.partAt = len(c.answer)
	}
	if ev.Part != c.part && c.answer == "" {
		c.partAt = 0
	}
	c.part = ev.Part
	c.answer += ev.Text
	sm.showStream(ctx, ch, c)
}

// subagentEvent shows a subagent's start or result: as its task in the stream where the run
// streams, else in the card (the start as its progress line, the result in the list).
func (sm streams) subagentEvent(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) {
	if ev.Subagent == nil {
		return
	}
	status := channels.TaskRunning
	if ev.Kind == runs.EventSubagentResult {
		c.addSubagent(ev.Subagent)
		status = channels.TaskDone
		if r := ev.Subagent.StopReason; r != "" && r != "completed" {
			status = channels.TaskFailed
		}
	}
	if _, ok := sm.streamer(ch, c); ok {
		sm.streamTask(ctx, ch, c, subagentTask(ev.Subagent, status))
		return
	}
	if status == channels.TaskRunning {
		c.progress = orDefault(ev.Subagent.Name, "Subagent") + " started."
	}
	sm.d.update(ctx, ch, c)
}

// streamTask queues a subagent's task update and shows it like a delta.
func (sm streams) streamTask(ctx context.Context, ch channels.Channel, c *runCard, t channels.StreamTask) {
	if c.stream == nil {
		c.stream = &runStream{}
	}
	if t.Title == "" {
		t.Title = "Subagent"
	}
	st := c.stream
	st.open = slices.DeleteFunc(st.open, func(o channels.StreamTask) bool { return o.ID == t.ID })
	if t.Status == channels.TaskRunning {
		st.open = append(st.open, t)
	}
	st.tasks = append(st.tasks, t)
	sm.showStream(ctx, ch, c)
}

// showStream brings the stream (or the message it fell back to) up to date with c.
func (sm streams) showStream(ctx context.Context, ch channels.Channel, c *runCard) {
	if c.stream == nil {
		c.stream = &runStream{}
	}
	st := c.stream
	switch {
	case st.broken || c.noStream:
		sm.d.update(ctx, ch, c)
		return
	case st.ref.ID() == "" && c.owed:
		// Within the grace period the answer and the tasks are kept: a run that ends within it
		// shows its answer as one message (one call, not a start and a stop), and one that
		// outlasts it starts the stream with all it kept when the period ends (postPlaceholder).
		return
	case st.ref.ID() == "":
		sm.d.ph.stopGrace(c) // the stream is the run's message: no placeholder before it
		sm.startStream(ctx, ch, c)
		return
	}
	sm.d.throttle(ctx, c, sm.d.opt.StreamEvery[c.conv.Platform], func(ctx context.Context) {
		if c.streaming() {
			sm.flushStream(ctx, ch, c)
		} else {
			sm.d.editProgress(ctx, ch, c) // the stream broke meanwhile
		}
	})
}

// pendingUpdate is what c's stream has not shown yet.
func (c *runCard) pendingUpdate() channels.StreamUpdate {
	st := c.stream
	u := channels.StreamUpdate{Text: c.answer[st.sent:], Tasks: slices.Clone(st.tasks)}
	if len(st.tasks) > 0 && st.plan != planWorking {
		u.Plan = planWorking
	}
	return u
}

// sentUpdate notes u as shown.
func (c *runCard) sentUpdate(u channels.StreamUpdate) {
	st := c.stream
	st.sent += len(u.Text)
	st.tasks = st.tasks[min(len(u.Tasks), len(st.tasks)):]
	if u.Plan != "" {
		st.plan = u.Plan
	}
}

// startStream starts c's stream with what c holds, records it, and on a refusal falls back to
// the placeholder card (which then shows the text so far).
func (sm streams) startStream(ctx context.Context, ch channels.Channel, c *runCard) {
	s, ok := sm.streamer(ch, c)
	if !ok {
		c.noStream = true
		sm.d.ph.postPlaceholder(ctx, ch, c, false)
		return
	}
	u := c.pendingUpdate()
	if u.Empty() {
		u.Plan = planStarted // the grace period ended before anything to show: a working title
	}
	var ref channels.MessageRef
	err := channels.RetryRateLimited(ctx, sm.d.opt.MaxRetryWait, sm.d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = s.StartStream(ctx, c.target(), u)
		return err
	})
	if err != nil {
		kind := "stream_failed"
		if errors.Is(err, channels.ErrStreamRefused) {
			kind = "stream_refused"
		}
		sm.d.m.OutboundError(c.conv.Platform, kind)
		sm.d.log.Info("channels: the answer cannot be streamed here; posting and editing instead", "run", c.runID, "err", err)
		c.noStream = true
		sm.d.ph.postPlaceholder(ctx, ch, c, false)
		return
	}
	if ref.Conv.IsZero() {
		ref.Conv = c.conv
	}
	c.stream.ref, c.lastEdit = ref, sm.d.now()
	c.sentUpdate(u)
	sm.d.rs.record(ctx, c.runID, StepStream, ref)
}

// flushStream appends what the stream has not shown. A refusal turns the stream into a
// post-and-edit message: it is edited at once with the working card, which shows the whole
// answer so far in place of the streamed text.
func (sm streams) flushStream(ctx context.Context, ch channels.Channel, c *runCard) {
	s, _ := ch.(channels.Streamer)
	u := c.pendingUpdate()
	if s == nil || u.Empty() {
		return
	}
	err := channels.RetryRateLimited(ctx, sm.d.opt.MaxRetryWait, sm.d.opt.RateLimitAttempts, func(ctx context.Context) error {
		return s.AppendStream(ctx, c.stream.ref, u)
	})
	c.lastEdit = sm.d.now()
	switch {
	case err == nil:
		c.sentUpdate(u)
	case errors.Is(err, channels.ErrStreamRefused), errors.Is(err, channels.ErrMessageGone):
		sm.breakStream(c, err)
		sm.d.editProgress(ctx, ch, c)
	default:
		// Kept for the next append (or the stop): the text is not lost.
		sm.d.m.OutboundError(c.conv.Platform, "stream_append_failed")
		sm.d.log.Debug("channels: appending to the stream failed", "run", c.runID, "err", err)
	}
}

// breakStream gives the stream up mid-answer: its message becomes the run's card, edited from
// now on.
func (sm streams) breakStream(c *runCard, err error) {
	kind := "stream_failed"
	if errors.Is(err, channels.ErrStreamRefused) {
		kind = "stream_refused"
	}
	sm.d.m.OutboundError(c.conv.Platform, kind)
	sm.d.log.Info("channels: the platform stopped the stream mid-answer; editing its message instead", "run", c.runID, "err", err)
	c.stream.broken = true
	c.noStream = true
	c.ref = c.stream.ref
}

// shownPart is the text of the answer's current part the message shows.
func (c *runCard) shownPart() string {
	sent := 0
	if c.stream != nil {
		sent = c.stream.sent
	}
	if c.partAt > sent || sent > len(c.answer) {
		return ""
	}
	return c.answer[c.partAt:sent]
}

// closeOpenTasks adds to u, the stream's last update, an end for every task still in progress:
// a subagent whose end was never told (the run failed, was cancelled or retried under it) must
// not show as working forever. done: the run answered, so they count as complete.
func (c *runCard) closeOpenTasks(u *channels.StreamUpdate, done bool) {
	for _, t := range c.stream.open {
		t.Status, t.Output = channels.TaskFailed, "Stopped."
		if done {
			t.Status, t.Output = channels.TaskDone, ""
		}
		u.Tasks = append(u.Tasks, t)
	}
	c.stream.open = nil
}

// dropStream drops c's stream (best effort): nothing it showed lasts, so none of the answer
// counts as shown.
func (sm streams) dropStream(ctx context.Context, dr channels.StreamDropper, c *runCard) {
	if err := dr.DropStream(ctx, c.stream.ref); err != nil {
		sm.d.log.Debug("channels: dropping the stream", "run", c.runID, "err", err)
	}
	c.stream.sent, c.stream.tasks, c.stream.open = 0, nil, nil
}

// leaveStream ends c's stream where it stands (what is pending added, best effort) and hands
// its message over to post-and-edit: the working card, edited in, replaces the streamed text.
// A stream that shows nothing lasting is dropped instead (channels.StreamDropper).
func (sm streams) leaveStream(ctx context.Context, ch channels.Channel, c *runCard) {
	if !c.streaming() {
		return
	}
	sm.d.stopTimer(c)
	if dr, ok := ch.(channels.StreamDropper); ok {
		sm.dropStream(ctx, dr, c)
	} else if s, ok := ch.(channels.Streamer); ok {
		u := c.pendingUpdate()
		c.closeOpenTasks(&u, false)
		if err := s.StopStream(ctx, c.stream.ref, u); err != nil {
			sm.d.log.Debug("channels: ending the stream", "run", c.runID, "err", err)
		} else {
			c.sentUpdate(u)
		}
	}
	c.stream.broken, c.noStream, c.ref = true, true, c.stream.ref
}

// restart forgets the answer an earlier attempt of the run streamed in this process (a model
// outage's retry writes it again from the start): its stream, if still going, is ended and its
// message edited from now on, the new attempt's text replacing the old.
func (sm streams) restart(ctx context.Context, ch channels.Channel, c *runCard) {
	if c.stream == nil && c.answer == "" {
		return
	}
	sm.leaveStream(ctx, ch, c)
	if c.answer != "" {
		c.progress = "" // the new attempt's text will show that the answer follows
	}
	c.answer, c.part, c.partAt = "", 0, 0
	if c.stream != nil {
		c.stream.sent, c.stream.tasks = 0, nil
	}
}

// finishStream ends the run's healthy stream. A final answer stops it with what the final text
// adds to the streamed part (the text already shown is never sent again); when the final text
// is not a continuation of it, or another closing event ends the run, it is stopped with what
// is pending and the caller goes on (handled false): the final card is edited in, or the
// closing card posted. A refusal hands the message over to post-and-edit.
func (sm streams) finishStream(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) (handled bool) {
	s, _ := ch.(channels.Streamer)
	u := c.pendingUpdate()
	if c.stream.plan != "" || u.Plan != "" {
		u.Plan = planDone
	}
	c.closeOpenTasks(&u, ev.Kind == runs.EventFinal)
	cur := c.answer[c.partAt:]
	continues := ev.Kind == runs.EventFinal && strings.TrimSpace(ev.Text) != "" && strings.HasPrefix(ev.Text, cur) &&
		!sm.tooLong(ch, c, ev)
	if continues {
		u.Text += ev.Text[len(cur):]
	}
	if dr, ok := ch.(channels.StreamDropper); ok && !continues && ev.Kind == runs.EventFinal {
		sm.dropStream(ctx, dr, c) // the final card takes the stream's place
		c.ref, c.stream = c.stream.ref, nil
		return false
	}
	err := channels.RetryRateLimited(ctx, sm.d.opt.MaxRetryWait, sm.d.opt.RateLimitAttempts, func(ctx context.Context) error {
		return s.StopStream(ctx, c.stream.ref, u)
	})
	if err != nil {
		sm.breakStream(c, err)
		return false
	}
	c.sentUpdate(u)
	ref := c.stream.ref
	c.stream = nil
	switch {
	case continues:
		sm.d.rs.record(ctx, c.runID, StepFinal, ref)
		return true
	case ev.Kind == runs.EventFinal:
		c.ref = ref // the final card replaces the streamed text
	}
	return false
}

// tooLong reports whether the final answer takes more than Options.MaxAnswerMessages:
// then the stream stops without it, and the answer's head replaces the streamed text (the rest
// goes as a file), as for an answer not streamed.
func (sm streams) tooLong(ch channels.Channel, c *runCard, ev runs.Event) bool {
	if sm.d.opt.MaxAnswerMessages <= 0 {
		return false
	}
	_, rest := splitAnswer(ch, sm.d.cl.closingCard(c, ev), sm.d.opt.MaxAnswerMessages)
	return rest != ""
}

// unseen is what of text the message c fell back from does not show: text without the part of
// it the stream already showed, or all of it when it does not continue that part.
func (c *runCard) unseen(text string) string {
	if cur := c.shownPart(); cur != "" && strings.HasPrefix(text, cur) {
		return text[len(cur):]
	}
	return text
}

// staleStream ends the stream an earlier attempt of the run started (best effort: it may have
// ended already); the message is the run's card from now on.
func (sm streams) staleStream(ctx context.Context, ch channels.Channel, c *runCard, ref channels.MessageRef) {
	if dr, ok := ch.(channels.StreamDropper); ok {
		if err := dr.DropStream(ctx, ref); err != nil {
			sm.d.log.Debug("channels: dropping an earlier attempt's stream", "run", c.runID, "err", err)
		}
		return
	}
	if s, ok := ch.(channels.Streamer); ok {
		if err := s.StopStream(ctx, ref, channels.StreamUpdate{}); err != nil {
			sm.d.log.Debug("channels: ending an earlier attempt's stream", "run", c.runID, "err", err)
		}
	}
}

func decodeRef(b []byte, k conv.Key) channels.MessageRef {
	var ref channels.MessageRef
	if json.Unmarshal(b, &ref) != nil {
		return channels.MessageRef{}
	}
	if ref.Conv.IsZero() {
		ref.Conv = k
	}
	return ref
}

// taskOutput is a subagent's one-line result for its task.
func taskOutput(s *runs.SubagentInfo) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s.Summary), "\n")
	if utf8.RuneCountInString(line) > maxTaskOutput {
		line = string([]rune(line)[:maxTaskOutput-1]) + "…"
	}
	return line
}

func subagentTask(s *runs.SubagentInfo, status channels.TaskStatus) channels.StreamTask {
	id := s.ID
	if id == "" {
		id = s.Name
	}
	t := channels.StreamTask{ID: id, Title: s.Name, Status: status}
	if status != channels.TaskRunning {
		t.Output = taskOutput(s)
	}
	return t
}

// workingBody is the working card's body: the answer so far, once there is one, then the
// latest progress.
func (c *runCard) workingBody() string {
	if c.answer != "" {
		return forms.JoinParagraphs(c.answer, c.progress)
	}
	return c.progress
}
