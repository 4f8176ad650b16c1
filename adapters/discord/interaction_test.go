package discord

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/render"
)

// cardInThread posts a form card in a thread the bot started from a mention and returns the
// thread's conversation and the card's message id.
func cardInThread(t *testing.T, h *harness) (conv.Key, string) {
	t.Helper()
	ch := h.fk.Guild("500")
	mid := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "question", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() == 1 })
	k := h.rec.all()[0].Conv
	card := formCard()
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
	if err != nil {
		t.Fatal(err)
	}
	if k.Thread != mid {
		t.Fatalf("conversation %v", k)
	}
	return k, ref.ID()
}

func lastInbound(h *harness) channels.Inbound {
	all := h.rec.all()
	return all[len(all)-1]
}

func TestClickBecomesAnInteractionAnsweredPrivately(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	p := h.fk.PostedByBot(k.Thread)
	custom := discordfake.CustomIDs(p[0].Components)[1]
	h.rec.setOn(func(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
		if in.Interaction != nil {
			return ch.(channels.InteractionResponder).RespondInteraction(ctx, in.Interaction, "This question is for someone else.")
		}
		return nil
	})
	ixID := h.fk.Click(k.Thread, msg, bob, custom)
	poll.Until(t, "the click", func() bool { return h.rec.count() == 2 })
	in := lastInbound(h)
	if in.Interaction == nil || in.Interaction.Data != custom || in.Interaction.ID != ixID || in.Conv != k ||
		in.Identity.ChannelUserID != bob.ID || in.Interaction.Message.ID() != msg || in.Interaction.Message.Conv != k {
		t.Fatalf("inbound = %+v / %+v", in, in.Interaction)
	}
	ix, _ := h.fk.InteractionByID(ixID)
	r := ix.Replies()
	if len(r) != 1 || !r[0].Ephemeral || r[0].Content != "This question is for someone else." {
		t.Errorf("replies = %+v", r)
	}
	if d, ok := ix.Acked(); !ok || d > discordfake.AckDeadline {
		t.Errorf("acked after %v (%v)", d, ok)
	}
	if len(h.fk.PostedByBot(k.Thread)) != 1 {
		t.Error("the refusal is visible in the thread")
	}
}

func TestSlowClickIsDeferredWithinThreeSeconds(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.DeferAfter = 50 * time.Millisecond })
	k, msg := cardInThread(t, h)
	custom := discordfake.CustomIDs(h.fk.PostedByBot(k.Thread)[0].Components)[0]
	var ixID string
	h.rec.setOn(func(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
		if in.Interaction == nil {
			return nil
		}
		// Busy past the defer point: the adapter acknowledges meanwhile; the late notice is a
		// follow-up.
		poll.Until(t, "the deferral", func() bool {
			ix, _ := h.fk.InteractionByID(in.Interaction.ID)
			_, ok := ix.Acked()
			return ok
		})
		return ch.(channels.InteractionResponder).RespondInteraction(ctx, in.Interaction, "late notice")
	})
	ixID = h.fk.Click(k.Thread, msg, alice, custom)
	poll.Until(t, "the click", func() bool { return h.rec.count() == 2 })
	ix, _ := h.fk.InteractionByID(ixID)
	if d, ok := ix.Acked(); !ok || d > discordfake.AckDeadline || ix.Responses[0].Type != discordfake.CallbackDeferredUpdate {
		t.Errorf("acked %v %v %+v", d, ok, ix.Responses)
	}
	if r := ix.Replies(); len(r) != 1 || r[0].Content != "late notice" || !r[0].Ephemeral {
		t.Errorf("replies = %+v", r)
	}
}

func TestUnansweredClickIsAcknowledgedSilently(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	custom := discordfake.CustomIDs(h.fk.PostedByBot(k.Thread)[0].Components)[0]
	ixID := h.fk.Click(k.Thread, msg, alice, custom)
	poll.Until(t, "the ack", func() bool {
		ix, _ := h.fk.InteractionByID(ixID)
		_, ok := ix.Acked()
		return ok
	})
	ix, _ := h.fk.InteractionByID(ixID)
	if ix.Responses[0].Type != discordfake.CallbackDeferredUpdate || len(ix.Replies()) != 0 {
		t.Errorf("responses %+v", ix.Responses)
	}
}

func TestSelectAndModalSubmitCarryValues(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	h.fk.Select(k.Thread, msg, alice, "sel-1", "v1", "v2")
	poll.Until(t, "the select", func() bool { return h.rec.count() == 2 })
	if in := lastInbound(h); in.Interaction == nil || strings.Join(in.Interaction.Values["sel-1"], ",") != "v1,v2" {
		t.Errorf("select = %+v", in.Interaction)
	}
	h.fk.Submit(k.Thread, msg, alice, "modal-1", map[string]string{"in-a": "hello", "in-b": "world"})
	poll.Until(t, "the submit", func() bool { return h.rec.count() == 3 })
	in := lastInbound(h)
	if in.Interaction == nil || in.Interaction.Data != "modal-1" || in.Interaction.Values["in-a"][0] != "hello" ||
		in.Interaction.Values["in-b"][0] != "world" {
		t.Errorf("submit = %+v", in.Interaction)
	}
}

func TestOpenFormAnswersWithAModal(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	form := render.Form{Token: "qRUN2", Question: "Tell me", AllowFreeText: true, Fields: []render.FormField{
		{ID: "name", Label: "Name", Kind: render.KindText, Required: true}}}
	h.rec.setOn(func(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
		if in.Interaction == nil {
			return nil
		}
		return ch.(channels.FormOpener).OpenForm(ctx, in.Interaction, form)
	})
	ixID := h.fk.Click(k.Thread, msg, alice, "open")
	poll.Until(t, "the click", func() bool { return h.rec.count() == 2 })
	ix, _ := h.fk.InteractionByID(ixID)
	custom, inputs, ok := ix.Modal()
	if !ok || len(inputs) != 2 || inputs[0].Required == nil || !*inputs[0].Required || inputs[0].CustomID != "name" {
		t.Fatalf("modal %q %+v %v", custom, inputs, ok)
	}
	if a, err := render.DecodeAction(h.key, inputs[1].CustomID); err != nil || a.Kind != render.ActionFreeText {
		t.Errorf("free-text input id %+v %v", a, err)
	}
	if a, err := render.DecodeAction(h.key, custom); err != nil || a.Kind != render.ActionSubmit || a.Token != "qRUN2" {
		t.Errorf("modal id %+v %v", a, err)
	}
	// Answered once: the router's empty notice after the modal makes no second callback.
	if err := h.ch.RespondInteraction(context.Background(), &channels.Interaction{ID: ixID, Token: ix.Token}, ""); err != nil {
		t.Logf("respond after modal: %v", err)
	}
	ix, _ = h.fk.InteractionByID(ixID)
	if len(ix.Responses) != 1 {
		t.Errorf("responses = %+v", ix.Responses)
	}
}

func TestSlashCommandIsDeferredThenAnswered(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	h.rec.setOn(func(ctx context.Context, c channels.Channel, in channels.Inbound) error {
		if in.Command == "" {
			return nil
		}
		_, err := c.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: "You are " + in.Identity.ChannelUserID})
		return err
	})
	ixID := h.fk.Slash(ch, alice, "botadmin", "allow", "123 456")
	poll.Until(t, "the command", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	if in.Command != "allow" || strings.Join(in.Args, ",") != "123,456" || in.Interaction != nil ||
		in.Conv != (conv.Key{Platform: "discord", Workspace: "500", Chat: ch}) {
		t.Fatalf("inbound = %+v", in)
	}
	ix, _ := h.fk.InteractionByID(ixID)
	if len(ix.Responses) != 1 || ix.Responses[0].Type != discordfake.CallbackDeferred {
		t.Fatalf("responses %+v", ix.Responses)
	}
	var data struct{ Flags int }
	if err := json.Unmarshal(ix.Responses[0].Data, &data); err != nil || data.Flags&discordfake.FlagEphemeral == 0 {
		t.Errorf("deferred with %s, want the ephemeral flag", ix.Responses[0].Data)
	}
	r := ix.Replies()
	if len(r) != 1 || r[0].Content != "You are "+alice.ID || !r[0].Ephemeral {
		t.Errorf("replies = %+v, want one ephemeral", r)
	}
	if p := h.fk.PostedByBot(ch); len(p) != 0 {
		t.Errorf("visible to the channel: %+v", p)
	}
}

// TestSlashCommandLongReplyStaysEphemeral: a reply in several pieces fills the ephemeral
// response and continues in follow-ups flagged ephemeral too, so none of it is public.
func TestSlashCommandLongReplyStaysEphemeral(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	long := strings.Repeat("word ", 700) // 3,500 characters: two messages
	h.rec.setOn(func(ctx context.Context, c channels.Channel, in channels.Inbound) error {
		_, err := c.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: long})
		return err
	})
	id := h.fk.Slash(ch, alice, "bot", "help", "")
	poll.Until(t, "the reply", func() bool { return h.rec.count() == 1 })
	ix, _ := h.fk.InteractionByID(id)
	r := ix.Replies()
	if len(r) < 2 {
		t.Fatalf("replies = %+v, want the original and a follow-up", r)
	}
	for i, m := range r {
		if !m.Ephemeral {
			t.Errorf("piece %d is public", i)
		}
	}
	if p := h.fk.PostedByBot(ch); len(p) != 0 {
		t.Errorf("visible to the channel: %d messages", len(p))
	}
}

func TestRegisterCommandsOnlyWhenChanged(t *testing.T) {
	fk := discordfake.New(t)
	specs := channels.Commands()
	for range 2 {
		// One after the other, as restarts are: two live sessions of one shard would keep
		// replacing each other.
		h := newHarness(t, fk, nil)
		if err := h.ch.RegisterCommands(context.Background(), specs); err != nil {
			t.Fatal(err)
		}
		if err := h.ch.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := fk.CommandOverwrites(); n != 1 {
		t.Errorf("%d bulk overwrites over two starts, want 1", n)
	}
	cmds := fk.Commands("")
	if len(cmds) != 2 {
		t.Fatalf("commands = %+v", cmds)
	}
	for _, c := range cmds {
		switch c.Name {
		case "bot":
			if c.DefaultMemberPermissions != nil {
				t.Errorf("/bot is restricted: %v", *c.DefaultMemberPermissions)
			}
		case "botadmin":
			if c.DefaultMemberPermissions == nil || *c.DefaultMemberPermissions != "0" {
				t.Errorf("/botadmin permissions %v", c.DefaultMemberPermissions)
			}
		default:
			t.Errorf("unexpected command %q", c.Name)
		}
	}
	h := newHarness(t, fk, func(c *Config) { c.DevGuild = "500" })
	if err := h.ch.RegisterCommands(context.Background(), specs[:2]); err != nil {
		t.Fatal(err)
	}
	if len(fk.Commands("500")) != 1 || fk.CommandOverwrites() != 2 {
		t.Errorf("dev guild commands %+v", fk.Commands("500"))
	}
}

// TestAdminCommandShownToAdminPermission: with AdminPermission, /botadmin is registered for the
// members holding it (default_member_permissions), and a change of it registers again.
func TestAdminCommandShownToAdminPermission(t *testing.T) {
	fk := discordfake.New(t)
	h := newHarness(t, fk, func(c *Config) { c.AdminPermission = 1 << 5 })
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	for _, c := range fk.Commands("") {
		if c.Name == "botadmin" && (c.DefaultMemberPermissions == nil || *c.DefaultMemberPermissions != "32") {
			t.Errorf("/botadmin permissions %v, want 32 (MANAGE_GUILD)", c.DefaultMemberPermissions)
		}
	}
	if err := h.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, fk, nil)
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	if n := fk.CommandOverwrites(); n != 2 {
		t.Errorf("%d bulk overwrites, want 2: the permission changed", n)
	}
}

func TestSlashCommandTheRouterCannotTakeSaysSo(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	h.rec.setOn(func(context.Context, channels.Channel, channels.Inbound) error {
		return errors.New("redis is down")
	})
	id := h.fk.Slash(ch, alice, "bot", "status", "")
	poll.Until(t, "the failure shown", func() bool {
		ix, _ := h.fk.InteractionByID(id)
		r := ix.Replies()
		return len(r) == 1 && strings.Contains(r[0].Content, "failed")
	})
}

func TestFreeTextButtonOpensAModalWhoseSubmitIsTheAnswer(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	free, err := render.EncodeAction(h.key, render.ActionID{Kind: render.ActionFreeText, Token: "qRUN1"})
	if err != nil {
		t.Fatal(err)
	}
	ixID := h.fk.Click(k.Thread, msg, alice, free)
	poll.Until(t, "the modal", func() bool {
		ix, _ := h.fk.InteractionByID(ixID)
		_, _, ok := ix.Modal()
		return ok
	})
	ix, _ := h.fk.InteractionByID(ixID)
	custom, inputs, _ := ix.Modal()
	if custom != free || len(inputs) != 1 || h.rec.count() != 1 {
		t.Fatalf("modal %q %+v; handed %d", custom, inputs, h.rec.count())
	}
	h.fk.Submit(k.Thread, msg, alice, custom, map[string]string{inputs[0].CustomID: "my own words"})
	poll.Until(t, "the submit", func() bool { return h.rec.count() == 2 })
	in := lastInbound(h)
	if in.Interaction.Data != free || in.Interaction.Values["answer"][0] != "my own words" {
		t.Errorf("submit = %+v", in.Interaction)
	}
}

func TestInteractionBucketsAreBounded(t *testing.T) {
	seen := map[string]bool{}
	for i := range 10000 {
		seen[tokenBucket("callback", "token-"+strconv.Itoa(i))] = true
	}
	if len(seen) > tokenBuckets {
		t.Errorf("%d buckets for 10,000 interactions, want at most %d", len(seen), tokenBuckets)
	}
}
