package console

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

// TestConsoleShowsEachSubagentResultOnceAsItFinishes proves the terminal — which cannot rewrite
// what scrolled by — prints each update of a working card as only what is new (a subagent that
// finished, a changed progress line), nothing for an update that adds nothing, and the closing
// card whole: the results in order, then the answer.
func TestConsoleShowsEachSubagentResultOnceAsItFinishes(t *testing.T) {
	var out bytes.Buffer
	c := New(Options{In: strings.NewReader(""), Out: &out})
	ctx := context.Background()
	working := func(body string, subs ...render.SubagentResult) channels.Message {
		return channels.Message{Card: &render.Card{Title: "Working on it…", Status: render.StatusWorking, Body: body, Subagents: subs}}
	}
	third := render.SubagentResult{Name: "Subagent 3", StopReason: "completed", Summary: "result of gamma"}
	first := render.SubagentResult{Name: "Subagent 1", StopReason: "completed", Summary: "result of alpha"}

	ref, err := c.Send(ctx, channels.Target{Conv: Conv}, working("Subagent 1 started."))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		msg      channels.Message
		want     []string
		unwanted []string
	}{
		{msg: working("Subagent 1 started.", third), want: []string{"result of gamma"}, unwanted: []string{"Subagent 1 started."}},
		{msg: working("Subagent 1 started.", third)},
		{msg: working("Subagent 1 started.", first, third), want: []string{"result of alpha"}, unwanted: []string{"result of gamma"}},
		{msg: working("Nearly there.", first, third), want: []string{"Nearly there."}, unwanted: []string{"result of"}},
		{msg: channels.Message{Card: &render.Card{Title: "Answer", Status: render.StatusDone, Body: "The answer.", Subagents: []render.SubagentResult{first, third}}},
			want: []string{"Answer", "result of alpha", "result of gamma", "The answer."}},
	}
	for i, st := range steps {
		before := out.Len()
		if _, err := c.Edit(ctx, ref, st.msg); err != nil {
			t.Fatal(err)
		}
		printed := out.String()[before:]
		if len(st.want) == 0 && printed != "" {
			t.Errorf("step %d: an update that adds nothing printed %q", i, printed)
		}
		for _, w := range st.want {
			if !strings.Contains(printed, w) {
				t.Errorf("step %d: printed %q, want %q in it", i, printed, w)
			}
		}
		for _, w := range st.unwanted {
			if strings.Contains(printed, w) {
				t.Errorf("step %d: printed %q again:\n%s", i, w, printed)
			}
		}
	}
	final := out.String()[strings.LastIndex(out.String(), "bot> "):]
	if a, g, ans := strings.Index(final, "result of alpha"), strings.Index(final, "result of gamma"), strings.Index(final, "The answer."); !(a < g && g < ans) {
		t.Errorf("the closing card does not show the results in order before the answer:\n%s", final)
	}
}
