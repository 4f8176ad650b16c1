package slack

import (
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/render"
)

// cleared reports whether the thread status was set and then cleared, the clear last.
func cleared(st []slackfake.Status) bool {
	return len(st) >= 2 && st[0].Status != "" && st[len(st)-1].Status == ""
}

// TestStatusClearedWhenTheFinalDeliveryFails proves "is thinking…" never outlives a run whose
// closing message cannot be delivered: a final post, a final edit or the end of a stream that
// fails for good still clears the thread's status, while a working card that fails leaves it.
func TestStatusClearedWhenTheFinalDeliveryFails(t *testing.T) {
	done := render.Card{Title: "Done", Status: render.StatusDone, Body: "answer"}
	failed := render.Card{Title: "Could not finish", Status: render.StatusFailed, Body: "The model refused the request."}
	working := render.Card{Title: "Working", Status: render.StatusWorking}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *harness, to channels.Target) error
	}{
		{"post", func(t *testing.T, h *harness, to channels.Target) error {
			h.fake.FailNext("chat.postMessage", -1, slackfake.Fault{Error: "channel_not_found"})
			_, err := h.ch.Send(ctx, to, channels.Message{Card: &done})
			return err
		}},
		{"post of a failure card", func(t *testing.T, h *harness, to channels.Target) error {
			h.fake.FailNext("chat.postMessage", -1, slackfake.Fault{Error: "is_archived"})
			_, err := h.ch.Send(ctx, to, channels.Message{Card: &failed})
			return err
		}},
		{"edit", func(t *testing.T, h *harness, to channels.Target) error {
			ref, err := h.ch.Send(ctx, to, channels.Message{Card: &working})
			if err != nil {
				t.Fatalf("working card: %v", err)
			}
			if st := h.fake.Statuses(); st[len(st)-1].Status == "" {
				t.Fatalf("statuses %+v: the working card must not clear the status", st)
			}
			h.fake.FailNext("chat.update", -1, slackfake.Fault{Error: "cant_update_message"})
			_, err = h.ch.Edit(ctx, ref, channels.Message{Card: &failed})
			return err
		}},
		{"stream stop", func(t *testing.T, h *harness, to channels.Target) error {
			ref, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Text: "Hello "})
			if err != nil {
				t.Fatalf("StartStream: %v", err)
			}
			h.fake.FailNext("chat.stopStream", -1, slackfake.Fault{Error: "internal_error"})
			return h.ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "world."})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			root := h.fake.NewTS()
			to := channels.Target{Conv: dmThread(root), ReplyTo: root, User: slackfake.TeamID + ":" + ann}
			if err := h.ch.Typing(ctx, to); err != nil {
				t.Fatal(err)
			}
			if err := tc.run(t, h, to); err == nil {
				t.Fatal("the final delivery succeeded; the fault did not apply")
			}
			if st := h.fake.Statuses(); !cleared(st) {
				t.Fatalf("statuses %+v, want the status cleared after the failed final delivery", st)
			}
		})
	}

	t.Run("working card fails", func(t *testing.T) {
		h := start(t, nil)
		to := channels.Target{Conv: dmThread(h.fake.NewTS())}
		if err := h.ch.Typing(ctx, to); err != nil {
			t.Fatal(err)
		}
		h.fake.FailNext("chat.postMessage", 1, slackfake.Fault{Error: "channel_not_found"})
		if _, err := h.ch.Send(ctx, to, channels.Message{Card: &working}); err == nil {
			t.Fatal("the working card was posted; the fault did not apply")
		}
		if st := h.fake.Statuses(); len(st) != 1 || st[0].Status == "" {
			t.Fatalf("statuses %+v: a working card that failed must leave the status (the run goes on)", st)
		}
	})
}
