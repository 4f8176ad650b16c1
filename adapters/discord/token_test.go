package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// botTexts are the texts of the bot's visible messages in channel.
func botTexts(fk *discordfake.Server, channel string) []string {
	var out []string
	for _, m := range fk.PostedByBot(channel) {
		out = append(out, m.Content)
	}
	return out
}

// TestCommandReplyPastTokenLifeGoesToDM: a slash command's reply made 14 minutes after the
// command (on the injected clock) does not use the interaction token: it goes, once, to the
// user's DM — privately, as the ephemeral response would have shown it — and in a DM
// conversation to that DM itself.
func TestCommandReplyPastTokenLifeGoesToDM(t *testing.T) {
	clock := &virtualClock{t: time.Now()}
	h := newHarness(t, nil, func(c *Config) { c.Now = clock.now })
	var sendErr error
	var ref channels.MessageRef
	h.rec.setOn(func(ctx context.Context, c channels.Channel, in channels.Inbound) error {
		clock.advance(tokenUsable)
		ref, sendErr = c.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: "late answer"})
		return nil
	})
	for _, tc := range []struct {
		name    string
		channel func() string
		dm      bool
	}{
		{"guild", func() string { return h.fk.Guild("500") }, false},
		{"dm", func() string { return h.fk.DM(bob.ID) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := alice
			if tc.dm {
				u = bob
			}
			ch := tc.channel()
			before := h.rec.count()
			id := h.fk.Slash(ch, u, "bot", "help", "")
			poll.Until(t, "the command handled", func() bool { return h.rec.count() == before+1 })
			if sendErr != nil || len(ref.IDs) != 1 {
				t.Fatalf("Send = %+v, %v", ref, sendErr)
			}
			ix, _ := h.fk.InteractionByID(id)
			if r := ix.Replies(); len(r) != 0 {
				t.Errorf("the expired token was used: %+v", r)
			}
			dm := h.fk.DMWith(u.ID)
			if got := botTexts(h.fk, dm); len(got) != 1 || got[0] != "late answer" {
				t.Errorf("DM shows %q, want the answer once", got)
			}
			if !tc.dm {
				if got := botTexts(h.fk, ch); len(got) != 0 {
					t.Errorf("the channel shows %q: the reply was private", got)
				}
			}
		})
	}
}

// TestCommandReplyWhenDiscordRefusesTheToken: when Discord answers 401 for the token (its 15
// minutes are over though the clock said otherwise), what the token could not carry goes to the
// DM and what it carried stays: the answer is neither lost nor doubled.
func TestCommandReplyWhenDiscordRefusesTheToken(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	var errs []error
	h.rec.setOn(func(ctx context.Context, c channels.Channel, in channels.Inbound) error {
		to := channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}
		_, err := c.Send(ctx, to, channels.Message{Text: "first part"})
		errs = append(errs, err)
		h.fk.ExpireToken(strings.TrimPrefix(in.MessageID, commandReplyPrefix))
		_, err = c.Send(ctx, to, channels.Message{Text: "second part"})
		errs = append(errs, err)
		_, err = c.Send(ctx, to, channels.Message{Text: "third part"})
		errs = append(errs, err)
		return nil
	})
	id := h.fk.Slash(ch, alice, "bot", "help", "")
	poll.Until(t, "the command handled", func() bool { return h.rec.count() == 1 })
	for i, err := range errs {
		if err != nil {
			t.Errorf("send %d: %v", i, err)
		}
	}
	ix, _ := h.fk.InteractionByID(id)
	if r := ix.Replies(); len(r) != 1 || r[0].Content != "first part" {
		t.Errorf("interaction replies %+v, want the first part only", r)
	}
	if got := botTexts(h.fk, h.fk.DMWith(alice.ID)); strings.Join(got, "|") != "second part|third part" {
		t.Errorf("DM shows %q, want the rest once each", got)
	}
	webhook := 0
	for _, c := range h.fk.Calls() {
		if c.Route == discordfake.RouteFollowupMsg || c.Route == discordfake.RouteFollowup {
			webhook++
		}
	}
	if webhook != 2 {
		t.Errorf("%d webhook calls, want 2 (the edit, the refused follow-up): a refused token is not tried again", webhook)
	}
}
