package delivery

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// fakeStreamer is the fake platform with native streaming: a stream is a live message of the
// fake channel whose text grows with each call.
type fakeStreamer struct {
	*fakeChannel

	smu      sync.Mutex
	streams  map[string]*fakeStream // by message id
	starts   int
	appends  int
	stops    int
	refuseAt int // the appendStream call (1-based) from which the platform refuses (0: never)
	noStart  bool
	noThread bool // CanStream says no
}

type fakeStream struct {
	text    string
	plan    string
	tasks   map[string]channels.StreamTask
	order   []string
	stopped bool
}

func newFakeStreamer() *fakeStreamer {
	return &fakeStreamer{fakeChannel: newFakeChannel("test"), streams: map[string]*fakeStream{}}
}

func (f *fakeStreamer) CanStream(to channels.Target) bool { return !f.noThread }

func (f *fakeStreamer) apply(s *fakeStream, u channels.StreamUpdate) {
	s.text += u.Text
	if u.Plan != "" {
		s.plan = u.Plan
	}
	for _, t := range u.Tasks {
		if _, ok := s.tasks[t.ID]; !ok {
			s.order = append(s.order, t.ID)
		}
		s.tasks[t.ID] = t
	}
}

func (f *fakeStreamer) StartStream(ctx context.Context, to channels.Target, u channels.StreamUpdate) (channels.MessageRef, error) {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.starts++
	if f.noStart {
		return channels.MessageRef{}, channels.ErrStreamRefused
	}
	ref, err := f.fakeChannel.Send(ctx, to, channels.Message{Text: "(stream)"})
	if err != nil {
		return ref, err
	}
	s := &fakeStream{tasks: map[string]channels.StreamTask{}}
	f.apply(s, u)
	f.streams[ref.ID()] = s
	f.show(ref.ID(), s)
	return ref, nil
}

// show mirrors the stream's text into the fake channel's live message.
func (f *fakeStreamer) show(id string, s *fakeStream) {
	f.Mu.Lock()
	f.Live[id] = s.text
	f.Mu.Unlock()
}

func (f *fakeStreamer) AppendStream(_ context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.appends++
	s := f.streams[ref.ID()]
	if s == nil || s.stopped || (f.refuseAt > 0 && f.appends >= f.refuseAt) {
		if s != nil {
			s.stopped = true
		}
		return channels.ErrStreamRefused
	}
	f.apply(s, u)
	f.show(ref.ID(), s)
	return nil
}

func (f *fakeStreamer) StopStream(_ context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	f.smu.Lock()
	defer f.smu.Unlock()
	f.stops++
	s := f.streams[ref.ID()]
	if s == nil || s.stopped {
		return channels.ErrStreamRefused
	}
	f.apply(s, u)
	s.stopped = true
	f.show(ref.ID(), s)
	return nil
}

func (f *fakeStreamer) stream() *fakeStream {
	f.smu.Lock()
	defer f.smu.Unlock()
	if len(f.streams) != 1 {
		return nil
	}
	for _, s := range f.streams {
		return s
	}
	return nil
}

var _ channels.Streamer = (*fakeStreamer)(nil)

func delta(run string, part int, text string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventAnswerDelta, Part: part, Text: text}
}

func subStarted(run, id, name string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventSubagentStarted, Subagent: &runs.SubagentInfo{ID: id, Name: name}}
}

// teamRun is a run's events as the lead emits them: a line, two subagents, the answer in
// deltas, the final text.
func teamRun(run string) []runs.Event {
	return attempt(1, "55",
		runs.Event{RunID: run, Kind: runs.EventStarted},
		delta(run, 1, "Let me ask "), delta(run, 1, "two helpers."),
		subStarted(run, "a1", "Flights"), subStarted(run, "a2", "Hotels"),
		subResult(run, "a1", "Flights", "Two flights found.\nDetails follow."),
		subResult(run, "a2", "Hotels", "One hotel."),
		delta(run, 2, "Book the 9:00 "), delta(run, 2, "flight"),
		final(run, "Book the 9:00 flight and the hotel."),
	)
}

// TestAnswerStreamedWithSubagentsAsTasks proves a streaming channel shows the whole run in one
// message: the answer as it is written, each subagent a task started then done with its one-line
// result, the final text completing the last part exactly once; nothing is posted as a card,
// the final is recorded, and a replay delivers nothing again.
func TestAnswerStreamedWithSubagentsAsTasks(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d := h.delivery(ch)
	run := runs.NewRunID()
	if !d.WantsAnswerDeltas(deliveryConv) {
		t.Fatal("a streaming channel must ask for answer deltas")
	}
	h.deliver(d, teamRun(run)...)
	s := ch.stream()
	if s == nil || !s.stopped {
		t.Fatalf("want one stopped stream, got %+v", ch.streams)
	}
	if want := "Let me ask two helpers.\n\nBook the 9:00 flight and the hotel."; s.text != want {
		t.Fatalf("stream text %q, want %q", s.text, want)
	}
	if len(s.order) != 2 || s.tasks["a1"].Status != channels.TaskDone || s.tasks["a1"].Title != "Flights" || s.tasks["a1"].Output != "Two flights found." ||
		s.tasks["a2"].Status != channels.TaskDone || s.tasks["a2"].Output != "One hotel." {
		t.Fatalf("tasks %+v", s.tasks)
	}
	if s.plan != planDone {
		t.Errorf("plan %q, want %q", s.plan, planDone)
	}
	if sends := ch.Sent(); len(sends) != 1 || ch.EditCount() != 0 {
		t.Fatalf("%d sends, %d edits: the stream must be the only message", len(sends), ch.EditCount())
	}
	if !h.recorded(run, StepFinal) || !h.recorded(run, StepStream) {
		t.Fatal("the stream and the final must be recorded")
	}
	replay := h.delivery(ch)
	h.deliver(replay, attempt(2, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, final(run, "Book the 9:00 flight and the hotel."))...)
	if ch.starts != 1 || ch.stops != 1 || len(ch.Sent()) != 1 {
		t.Fatalf("a replay after the final streamed again: %d starts, %d stops, %d sends", ch.starts, ch.stops, len(ch.Sent()))
	}
}

// TestStreamRefusedMidAnswerContinuesByEdit proves that when the platform stops streaming
// mid-answer, delivery edits the stream's message instead: the answer ends complete, in that
// one message, its text shown once.
func TestStreamRefusedMidAnswerContinuesByEdit(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	ch.refuseAt = 2
	d := h.delivery(ch)
	run := runs.NewRunID()
	h.deliver(d, teamRun(run)...)
	vis := ch.Visible()
	if len(vis) != 1 {
		t.Fatalf("visible %q, want the one message", vis)
	}
	if n := strings.Count(vis[0], "Book the 9:00 flight and the hotel."); n != 1 {
		t.Fatalf("the answer shows %d times:\n%s", n, vis[0])
	}
	if strings.Count(vis[0], "Book the 9:00") != 1 || !strings.Contains(vis[0], "Two flights found.") {
		t.Fatalf("the message:\n%s", vis[0])
	}
	if len(ch.Sent()) != 1 || ch.EditCount() == 0 {
		t.Fatalf("%d sends, %d edits: the stream's message must be edited, nothing posted", len(ch.Sent()), ch.EditCount())
	}
	if h.metrics.Get("outbound/test/stream_refused") != 1 {
		t.Errorf("the refusal is not counted")
	}
}

// TestStreamRefusedAtStartPostsAndEdits proves a conversation that refuses the stream gets the
// placeholder card, edited with the answer so far, and the answer card as today.
func TestStreamRefusedAtStartPostsAndEdits(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	ch.noStart = true
	d := h.delivery(ch)
	run := runs.NewRunID()
	h.deliver(d, teamRun(run)...)
	vis := ch.Visible()
	if len(vis) != 1 || strings.Count(vis[0], "Book the 9:00 flight and the hotel.") != 1 || !strings.Contains(vis[0], "Answer") {
		t.Fatalf("visible %q", vis)
	}
	if ch.starts != 1 {
		t.Errorf("%d starts: a refused conversation is asked once per run", ch.starts)
	}
}

// TestReplayAfterAStreamEditsItsMessage proves a run whose earlier attempt streamed (and died)
// ends that stream and edits its message with the answer: one message, the answer once.
func TestReplayAfterAStreamEditsItsMessage(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	run := runs.NewRunID()
	first := h.delivery(ch)
	evs := teamRun(run)
	h.deliver(first, evs[:4]...) // streamed a line and a task, then the process died
	second := h.delivery(ch)
	replay := teamRun(run)
	for i := range replay {
		replay[i].Attempt = 2
	}
	h.deliver(second, replay...)
	if ch.starts != 1 {
		t.Fatalf("%d streams started: the replay must reuse the first's message", ch.starts)
	}
	vis := ch.Visible()
	if len(vis) != 1 || strings.Count(vis[0], "Book the 9:00 flight and the hotel.") != 1 || strings.Count(vis[0], "Let me ask") > 1 {
		t.Fatalf("visible %q", vis)
	}
}

// TestAnswerDeltasCostNothingWithoutAStream proves a channel without streaming neither asks for
// deltas nor shows them.
func TestAnswerDeltasCostNothingWithoutAStream(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch)
	if d.WantsAnswerDeltas(deliveryConv) {
		t.Fatal("a post-and-edit channel asked for deltas")
	}
	run := runs.NewRunID()
	h.deliver(d, attempt(1, "55", delta(run, 1, "partial"))...)
	if len(h.ch.Sent()) != 0 {
		t.Fatalf("a delta was shown: %+v", h.ch.Sent())
	}
}

// TestRetriedAttemptRewritesTheStreamedText proves a run retried in the same process after a
// model outage — whose notice ends the stream and turns its message into the card that shows
// it — does not repeat the first attempt's text: the new attempt's answer replaces it, in the
// same message.
func TestRetriedAttemptRewritesTheStreamedText(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d := h.delivery(ch)
	run := runs.NewRunID()
	h.deliver(d, attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "Hello wor"),
		runs.Event{RunID: run, Kind: runs.EventProgress, Text: "The model is unavailable; the answer will follow."})...)
	if vis := ch.Visible(); len(vis) != 1 || !strings.Contains(vis[0], "unavailable") {
		t.Fatalf("the notice is not shown: %q", vis)
	}
	h.deliver(d, attempt(2, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "Hello "), delta(run, 1, "world."), final(run, "Hello world."))...)
	vis := ch.Visible()
	if len(vis) != 1 || strings.Count(vis[0], "Hello") != 1 || !strings.Contains(vis[0], "Hello world.") {
		t.Fatalf("visible %q, want the one message with the answer once", vis)
	}
	if ch.starts != 1 {
		t.Fatalf("%d streams: the retry must edit the first one's message", ch.starts)
	}
}

// TestQuestionAfterAStreamDoesNotRepeatItsText proves a run that streamed its text and then
// asks a question stops the stream and posts the question under it, without the text again.
func TestQuestionAfterAStreamDoesNotRepeatItsText(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d := h.delivery(ch)
	run := runs.NewRunID()
	form := &runs.Form{ID: "q" + run, Question: "How many people travel?", Fields: []runs.FormField{{ID: "n", Label: "People", Kind: runs.FieldChoice, Options: []string{"1", "2"}}}}
	h.deliver(d, attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "I need one detail first."),
		runs.Event{RunID: run, Kind: runs.EventClarification, Text: "I need one detail first.", Form: form})...)
	vis := ch.Visible()
	if len(vis) != 2 || vis[0] != "I need one detail first." || !strings.Contains(vis[1], "How many people travel?") || strings.Contains(vis[1], "I need one detail") {
		t.Fatalf("visible %q: want the stopped stream, then the question without its text", vis)
	}
	if s := ch.stream(); s == nil || !s.stopped {
		t.Fatal("the stream is not stopped")
	}
}

// TestStreamStartedWhenTheGracePeriodEnds proves a run that outlasts the placeholder's grace
// period before writing anything starts its stream then, with a working title and no card,
// and that its answer streams into that message.
func TestStreamStartedWhenTheGracePeriodEnds(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d, timers := h.lazyDelivery(ch)
	run := runReceivedAgo(0)
	h.deliver(d, attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted})...)
	if ch.starts != 0 {
		t.Fatal("the stream started within the grace period")
	}
	timers.fire()
	s := ch.stream()
	if ch.starts != 1 || s == nil || s.plan != planStarted || s.text != "" {
		t.Fatalf("after the grace period: %d starts, %+v", ch.starts, s)
	}
	h.deliver(d, attempt(1, "55", delta(run, 1, "All "), final(run, "All good."))...)
	if s.text != "All good." || !s.stopped || s.plan != planDone || len(ch.Sent()) != 1 {
		t.Fatalf("stream %+v, %d sends", s, len(ch.Sent()))
	}
}

// TestStreamAppendsThrottled proves deltas within Options.StreamEvery of the last call
// go out as one append when the interval ends, and that the final stops the stream with the
// rest whether or not that append came.
func TestStreamAppendsThrottled(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d := h.delivery(ch, func(o *Options) { o.StreamEvery = map[string]time.Duration{"test": time.Hour} })
	timers := &manualTimers{}
	d.afterFunc = timers.AfterFunc
	run := runs.NewRunID()
	h.deliver(d, attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "one "), delta(run, 1, "two "), delta(run, 1, "three "))...)
	// No grace period: started starts the stream at once; the deltas right after it wait.
	if ch.starts != 1 || ch.appends != 0 || ch.stream().text != "" {
		t.Fatalf("%d starts, %d appends, text %q: the deltas must wait for the interval", ch.starts, ch.appends, ch.stream().text)
	}
	if n := timers.fire(); n != 1 {
		t.Fatalf("%d timers fired, want the one append", n)
	}
	if ch.appends != 1 || ch.stream().text != "one two three " {
		t.Fatalf("%d appends, text %q", ch.appends, ch.stream().text)
	}
	h.deliver(d, attempt(1, "55", delta(run, 1, "four"), final(run, "one two three four five."))...)
	if s := ch.stream(); s.text != "one two three four five." || !s.stopped || ch.appends != 1 {
		t.Fatalf("stream %+v after %d appends", s, ch.appends)
	}
}

// TestStreamStoppedUnderAWorkingSubagent proves a run that fails while a subagent works stops
// its stream with that task ended, not left in progress, and posts the failure under it.
func TestStreamStoppedUnderAWorkingSubagent(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeStreamer()
	d := h.delivery(ch)
	run := runs.NewRunID()
	h.deliver(d, attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, subStarted(run, "a1", "Flights"),
		runs.Event{RunID: run, Kind: runs.EventFailed, Reason: "Sorry."})...)
	s := ch.stream()
	if s == nil || !s.stopped || s.tasks["a1"].Status != channels.TaskFailed {
		t.Fatalf("stream %+v", s)
	}
	if vis := ch.Visible(); len(vis) != 2 || !strings.Contains(vis[1], "Sorry.") {
		t.Fatalf("visible %q", vis)
	}
}

// fakeDrafts is a platform whose stream is a preview that shows nothing lasting until it is
// stopped (Telegram's drafts): StopStream posts the text as a message, DropStream ends the
// preview without posting, and an edit of a stream's ref posts its message in the stream's
// place, then edits that message.
type fakeDrafts struct {
	*fakeChannel

	dmu     sync.Mutex
	seq     int
	preview map[string]*draftPreview // by ref id
	stops   int
	drops   int
}

type draftPreview struct {
	text   string
	done   bool
	posted channels.MessageRef
}

func newFakeDrafts() *fakeDrafts {
	return &fakeDrafts{fakeChannel: newFakeChannel("test"), preview: map[string]*draftPreview{}}
}

var (
	_ channels.Streamer      = (*fakeDrafts)(nil)
	_ channels.StreamDropper = (*fakeDrafts)(nil)
)

func (f *fakeDrafts) CanStream(channels.Target) bool { return true }

func (f *fakeDrafts) StartStream(_ context.Context, to channels.Target, u channels.StreamUpdate) (channels.MessageRef, error) {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	f.seq++
	id := "draft:" + strconv.Itoa(f.seq)
	f.preview[id] = &draftPreview{text: u.Text}
	return channels.MessageRef{Conv: to.Conv, IDs: []string{id}}, nil
}

func (f *fakeDrafts) AppendStream(_ context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	p := f.preview[ref.ID()]
	if p == nil || p.done {
		return channels.ErrStreamRefused
	}
	p.text += u.Text
	return nil
}

func (f *fakeDrafts) StopStream(ctx context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	f.stops++
	p := f.preview[ref.ID()]
	if p == nil || p.done {
		return nil
	}
	p.text += u.Text
	p.done = true
	if strings.TrimSpace(p.text) == "" {
		return nil
	}
	posted, err := f.fakeChannel.Send(ctx, channels.Target{Conv: ref.Conv}, channels.Message{Text: p.text})
	p.posted = posted
	return err
}

func (f *fakeDrafts) DropStream(_ context.Context, ref channels.MessageRef) error {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	f.drops++
	if p := f.preview[ref.ID()]; p != nil {
		p.done = true
	}
	return nil
}

func (f *fakeDrafts) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	f.dmu.Lock()
	p := f.preview[ref.ID()]
	f.dmu.Unlock()
	if p == nil {
		return f.fakeChannel.Edit(ctx, ref, m)
	}
	f.dmu.Lock()
	defer f.dmu.Unlock()
	p.done = true
	if p.posted.ID() == "" {
		out, err := f.fakeChannel.Send(ctx, channels.Target{Conv: ref.Conv}, m)
		if err == nil {
			p.posted = out
		}
		return out, err
	}
	return f.fakeChannel.Edit(ctx, p.posted, m)
}

// TestDraftStreamEndsAsOneMessage proves a stream that shows nothing lasting until it is stopped
// ends as the one message its stop posts, with the whole answer: no card, no edit, no drop.
func TestDraftStreamEndsAsOneMessage(t *testing.T) {
	h := newDeliveryHarness(t)
	ch := newFakeDrafts()
	d := h.delivery(ch)
	run := runs.NewRunID()
	h.deliver(d, teamRun(run)...)
	sends := ch.Sent()
	if len(sends) != 1 || sends[0].Text != "Let me ask two helpers.\n\nBook the 9:00 flight and the hotel." || ch.EditCount() != 0 {
		t.Fatalf("sends %+v, %d edits: want the answer as the one message", sends, ch.EditCount())
	}
	if ch.stops != 1 || ch.drops != 0 {
		t.Fatalf("%d stops, %d drops", ch.stops, ch.drops)
	}
}

// TestDraftStreamHandedOverIsDroppedNotPosted proves a stream that shows nothing lasting is
// dropped where delivery hands it over to its card — a notice and the run's next attempt, a
// final that does not continue the streamed text — so that its text is never posted as a
// message of its own only to be edited away: the card is posted in the stream's place, and the
// answer shows once.
func TestDraftStreamHandedOverIsDroppedNotPosted(t *testing.T) {
	notice := runs.Event{Kind: runs.EventProgress, Text: "The model is unavailable; the answer will follow."}
	tests := []struct {
		name   string
		events func(run string) []runs.Event
		want   string
	}{
		{"a notice and a new attempt", func(run string) []runs.Event {
			n := notice
			n.RunID = run
			evs := attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "Hello wor"), n)
			return append(evs, attempt(2, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "Hello "), delta(run, 1, "world."), final(run, "Hello world."))...)
		}, "Hello world."},
		{"a final that does not continue the stream", func(run string) []runs.Event {
			return attempt(1, "55", runs.Event{RunID: run, Kind: runs.EventStarted}, delta(run, 1, "Thinking aloud"), final(run, "The answer."))
		}, "The answer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newDeliveryHarness(t)
			ch := newFakeDrafts()
			d := h.delivery(ch)
			run := runs.NewRunID()
			h.deliver(d, tt.events(run)...)
			for _, s := range ch.Sent() {
				if !strings.Contains(s.Text, "Working on it") && !strings.Contains(s.Text, "Answer") {
					t.Fatalf("the streamed text was posted as a message of its own: %q", s.Text)
				}
			}
			vis := ch.Visible()
			if len(vis) != 1 || strings.Count(vis[0], tt.want) != 1 {
				t.Fatalf("visible %q, want the one message with %q once", vis, tt.want)
			}
			if ch.stops != 0 || ch.drops != 1 {
				t.Fatalf("%d stops, %d drops: want the stream dropped once", ch.stops, ch.drops)
			}
		})
	}
}
