package lead

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/subagent"
)

// runState is one run's bridge from agent events to run events. Events go out in order through
// one goroutine, so a slow platform never holds up an agent's loop.
type runState struct {
	t     *Team
	run   *runs.Run
	lead  *agent.Agent
	place place // the run's profile
	asked *asked

	mu       sync.Mutex
	queue    []runs.Event
	closed   bool
	lastProg time.Time
	// order numbers the lead's delegate calls of this run (call id → 1, 2, …) in the order it
	// asked for them.
	order map[string]int
	// deltas: the sink shows answer text as it is written (runs.AnswerDeltaSink), so the lead's
	// chunks go out as EventAnswerDelta; part numbers the model steps that wrote some, and
	// partOf is the (turn, step) of the latest.
	deltas bool
	part   int
	partOf [2]int
	wake   chan struct{}
	done   chan struct{}
}

func newRunState(t *Team, run *runs.Run, lead *agent.Agent, p place) *runState {
	rs := &runState{t: t, run: run, lead: lead, place: p, asked: &asked{lead: lead}, order: map[string]int{}, deltas: run.WantsAnswerDeltas(),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go rs.loop()
	return rs
}

// delegated numbers the lead's delegate call callID: the next in this run.
func (rs *runState) delegated(callID string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, seen := rs.order[callID]; !seen {
		rs.order[callID] = len(rs.order) + 1
	}
}

// orderOf is the number of the lead's delegation that started the child of e (0 for a child
// no numbered call started).
func (rs *runState) orderOf(e subagent.Event) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.order[e.CallID]
}

// label is how users see the child of e: the name the lead gave it, else "Subagent" and the
// number of its delegation — never the backend's name ("spawn", "fork").
func (rs *runState) label(e subagent.Event) string {
	if e.Name != "" {
		return e.Name
	}
	if n := rs.orderOf(e); n > 0 {
		return "Subagent " + strconv.Itoa(n)
	}
	return "Subagent"
}

// answerDelta emits text the lead's model just wrote in step (turn, step) as an answer delta.
func (rs *runState) answerDelta(turn, step int, text string) {
	rs.mu.Lock()
	if key := [2]int{turn, step}; rs.part == 0 || key != rs.partOf {
		rs.part, rs.partOf = rs.part+1, key
	}
	part := rs.part
	rs.mu.Unlock()
	rs.emit(runs.Event{Kind: runs.EventAnswerDelta, Text: text, Part: part})
}

func (rs *runState) emit(ev runs.Event) {
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return
	}
	if n := len(rs.queue); ev.Kind == runs.EventAnswerDelta && n > 0 && rs.queue[n-1].Kind == runs.EventAnswerDelta && rs.queue[n-1].Part == ev.Part {
		// The sink is busy with an earlier event: the deltas waiting behind it go out as one,
		// so a slow platform gets fewer, larger appends instead of one call per token.
		rs.queue[n-1].Text += ev.Text
		rs.mu.Unlock()
		return
	}
	rs.queue = append(rs.queue, ev)
	rs.mu.Unlock()
	select {
	case rs.wake <- struct{}{}:
	default:
	}
}

// progress emits a progress event unless one went out less than ProgressEvery ago.
func (rs *runState) progress(tool, text string) {
	rs.mu.Lock()
	now := time.Now()
	if now.Sub(rs.lastProg) < rs.t.opts.ProgressEvery {
		rs.mu.Unlock()
		return
	}
	rs.lastProg = now
	rs.mu.Unlock()
	rs.emit(runs.Event{Kind: runs.EventProgress, Tool: tool, Text: text})
}

// maxSummaryRunes bounds a subagent's summary on a card; the lead's answer carries the detail.
const maxSummaryRunes = 600

func (rs *runState) subagentResult(e subagent.Event) {
	summary := e.LastAssistantMessage
	if e.StopReason != subagent.StopCompleted && e.Detail != "" {
		summary = e.Detail
	}
	if utf8.RuneCountInString(summary) > maxSummaryRunes {
		summary = string([]rune(summary)[:maxSummaryRunes]) + "…"
	}
	info := &runs.SubagentInfo{ID: e.ID, Name: rs.label(e), Order: rs.orderOf(e), StopReason: string(e.StopReason), Summary: summary}
	if e.Structured != "" && json.Valid([]byte(e.Structured)) {
		info.Structured = json.RawMessage(e.Structured)
	}
	rs.emit(runs.Event{Kind: runs.EventSubagentResult, Subagent: info})
}

func (rs *runState) loop() {
	defer close(rs.done)
	for {
		rs.mu.Lock()
		batch := rs.queue
		rs.queue = nil
		closed := rs.closed
		rs.mu.Unlock()
		for _, ev := range batch {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := rs.run.Emit(ctx, ev); err != nil {
				rs.t.log.Warn("lead: delivering a run event failed", "run", rs.run.Envelope.RunID, "kind", ev.Kind, "err", err)
			}
			cancel()
		}
		if closed && len(batch) == 0 {
			return
		}
		if !closed {
			<-rs.wake
		}
	}
}

// close flushes the queued events and stops the loop; idempotent.
func (rs *runState) close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
	select {
	case rs.wake <- struct{}{}:
	default:
	}
	<-rs.done
}
