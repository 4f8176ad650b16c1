package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/render"
)

// bodiesOf are the JSON bodies of the calls of method on route the fake answered with a 2xx.
func bodiesOf(fk *discordfake.Server, method, route string) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, c := range fk.Calls() {
		if c.Method == method && c.Route == route && c.Status < 300 {
			var b map[string]json.RawMessage
			if json.Unmarshal(c.Body, &b) == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// refusedCalls counts the calls of method on route the fake refused as an invalid form body.
func refusedCalls(fk *discordfake.Server, method, route string) int {
	n := 0
	for _, c := range fk.Calls() {
		if c.Method == method && c.Route == route && c.Status == 400 {
			n++
		}
	}
	return n
}

// checkShown fails unless every message is within Discord's limits for its kind: content up to
// 2,000, embeds up to 6,000; a V2 message without content or embeds, up to 40 components and
// 4,000 characters of text displays. (The fake refuses what breaks them; this says which.)
func checkShown(t *testing.T, msgs []discordfake.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.V2() {
			text := 0
			for _, s := range discordfake.TextDisplays(m.Components) {
				text += utf8.RuneCountInString(s)
			}
			if m.Content != "" || len(m.Embeds) != 0 || discordfake.CountComponents(m.Components) > discordfake.MaxV2Components || text > discordfake.MaxV2Text {
				t.Errorf("V2 message %d: content %q, %d embeds, %d components, %d characters of text", i, m.Content, len(m.Embeds),
					discordfake.CountComponents(m.Components), text)
			}
			continue
		}
		if n := utf8.RuneCountInString(m.Content); n > discordfake.MaxContent {
			t.Errorf("message %d: %d characters of content", i, n)
		}
	}
}

// approvalCard is a card like the one a tool call waits on: fields and Approve/Deny buttons.
func approvalCard() render.Card {
	return render.Card{Title: "Run `deploy`?", Status: render.StatusWaiting, Body: "The agent wants to run a tool.",
		Fields: []render.Field{{Label: "Tool", Value: "deploy", Inline: true}, {Label: "Arguments", Value: `{"env":"prod"}`}},
		Actions: []render.Action{{Label: "Approve", Style: render.StylePrimary, ID: render.ActionID{Kind: render.ActionButton, Token: "ap1"}},
			{Label: "Deny", Style: render.StyleDanger, ID: render.ActionID{Kind: render.ActionButton, Token: "ap1", Option: 1}}}}
}

func multiFieldForm() render.Form {
	return render.Form{Token: "qRUN9", Question: "A few details", AllowFreeText: true, Fields: []render.FormField{
		{ID: "audience", Label: "Who is it for?", Kind: render.KindChoice, Options: []string{"engineers", "executives"}, Required: true},
		{ID: "sections", Label: "Which sections?", Kind: render.KindMultiChoice, Options: []string{"summary", "timeline", "actions"}, Required: true},
		{ID: "notes", Label: "Anything to stress?", Kind: render.KindText},
		{ID: "email", Label: "Email it?", Kind: render.KindConfirm, Required: true},
	}}
}

// TestCardsGoOutAsComponentsV2WhereTheyFit proves the cards that fit one Components V2 message
// — an answer, subagent results, a failure, a clarification, an approval — are sent as one, with
// the flag and without content or embeds, showing their text; the working placeholder and an
// answer longer than one V2 message keep embeds (the placeholder so that any closing message can
// be edited into it; a long answer to split as before, in fewer messages).
func TestCardsGoOutAsComponentsV2WhereTheyFit(t *testing.T) {
	form := multiFieldForm()
	long := strings.Repeat("A paragraph of the long answer.\n\n", 200) // ~6,600 characters
	for _, tc := range []struct {
		name  string
		card  render.Card
		v2    bool
		shows string
	}{
		{"answer", render.Card{Title: "Answer", Status: render.StatusDone, Body: "The **answer** is 42."}, true, "is 42"},
		{"subagent results", render.Card{Title: "Checked", Status: render.StatusDone, Body: "All good.", Subagents: []render.SubagentResult{
			{Name: "web", StopReason: "completed", Summary: "Found 4 sources."}, {Name: "code", StopReason: "error", Summary: "Timed out."}}}, true, "Found 4 sources."},
		{"failure", render.Card{Title: "Could not finish", Status: render.StatusFailed, Body: "The model timed out."}, true, "timed out"},
		{"clarification", render.Card{Title: "Details", Status: render.StatusWaiting, Form: &form}, true, "A few details"},
		{"approval", approvalCard(), true, "deploy"},
		{"working placeholder", render.Card{Title: "Working on it…", Status: render.StatusWorking}, false, "Working on it"},
		{"long answer", render.Card{Title: "Long", Status: render.StatusDone, Body: long}, false, "long answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			k := dmConv(h)
			card := tc.card
			if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card}); err != nil {
				t.Fatal(err)
			}
			p := h.fk.PostedByBot(k.Chat)
			checkShown(t, p)
			if tc.v2 && (len(p) != 1 || !p[0].V2()) {
				t.Fatalf("%d message(s), V2 %v; want one Components V2 message", len(p), len(p) > 0 && p[0].V2())
			}
			if !tc.v2 {
				for i, m := range p {
					if m.V2() || len(m.Embeds) == 0 {
						t.Errorf("message %d: V2 %v with %d embeds, want embeds", i, m.V2(), len(m.Embeds))
					}
				}
			}
			all := ""
			for _, m := range p {
				all += m.Text()
			}
			if !strings.Contains(all, tc.shows) {
				t.Errorf("the card does not show %q:\n%s", tc.shows, all)
			}
			if tc.name == "long answer" && (len(p) != 2 || strings.Count(all, "A paragraph of the long answer.") != 200) {
				t.Errorf("%d messages, %d paragraphs; want the two messages of embeds as before, nothing lost", len(p), strings.Count(all, "A paragraph"))
			}
		})
	}
}

// TestComponentsV2BodiesAreDiscordgoComponents proves the V2 messages the adapter sends read
// as discordgo v0.29's own Components V2 types (what a click on them brings back is decoded by
// discordgo): a container of text displays and separators, then the action rows.
func TestComponentsV2BodiesAreDiscordgoComponents(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	card := approvalCard()
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	bodies := bodiesOf(h.fk, "POST", discordfake.RouteMessages)
	if len(bodies) != 1 {
		t.Fatalf("%d posts", len(bodies))
	}
	b := bodies[0]
	if string(b["flags"]) != "32768" || b["content"] != nil || b["embeds"] != nil {
		t.Errorf("flags %s, content %s, embeds %s: want the V2 flag alone", b["flags"], b["content"], b["embeds"])
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b["components"], &raws); err != nil || len(raws) != 2 {
		t.Fatalf("components %s: %v", b["components"], err)
	}
	var got []string
	for _, raw := range raws {
		c, err := discordgo.MessageComponentFromJSON(raw)
		if err != nil {
			t.Fatalf("discordgo cannot read %s: %v", raw, err)
		}
		switch v := c.(type) {
		case *discordgo.Container:
			for _, ch := range v.Components {
				switch ch.(type) {
				case *discordgo.TextDisplay:
					got = append(got, "text")
				case *discordgo.Separator:
					got = append(got, "separator")
				default:
					got = append(got, fmt.Sprintf("%T", ch))
				}
			}
			if v.AccentColor == nil || *v.AccentColor != render.StatusColor(render.StatusWaiting) {
				t.Errorf("accent colour %v", v.AccentColor)
			}
		case *discordgo.ActionsRow:
			got = append(got, fmt.Sprintf("row of %d", len(v.Components)))
		default:
			got = append(got, fmt.Sprintf("%T", c))
		}
	}
	want := "text,text,separator,text,text,separator,text,row of 2"
	if strings.Join(got, ",") != want {
		t.Errorf("discordgo reads %v, want %s", got, want)
	}
}

// TestPlaceholderIsEditedIntoTheAnswer proves the working placeholder (embeds) takes the closing
// card by an edit either way: a card that fits becomes the V2 message, the edit setting the flag
// with content null and embeds [] as Edit Message requires; a long answer stays embeds, split
// as before.
func TestPlaceholderIsEditedIntoTheAnswer(t *testing.T) {
	working := render.Card{Title: "Working on it…", Status: render.StatusWorking, Subagents: []render.SubagentResult{{Name: "web"}}}
	t.Run("an answer that fits becomes Components V2", func(t *testing.T) {
		h := newHarness(t, nil, nil)
		k := dmConv(h)
		ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &working})
		if err != nil {
			t.Fatal(err)
		}
		answer := render.Card{Title: "Answer", Status: render.StatusDone, Body: "It is 42.",
			Subagents: []render.SubagentResult{{Name: "web", StopReason: "completed", Summary: "Found it."}}}
		out, err := h.ch.Edit(context.Background(), ref, channels.Message{Card: &answer})
		if err != nil {
			t.Fatal(err)
		}
		p := h.fk.PostedByBot(k.Chat)
		if len(p) != 1 || out.ID() != ref.ID() || !p[0].V2() || len(p[0].Embeds) != 0 || p[0].Content != "" ||
			!strings.Contains(p[0].Text(), "It is 42.") || !strings.Contains(p[0].Text(), "Found it.") {
			t.Fatalf("after the edit: %+v", p)
		}
		patch := bodiesOf(h.fk, "PATCH", discordfake.RouteMessage)
		if len(patch) != 1 || string(patch[0]["flags"]) != "32768" || string(patch[0]["content"]) != "null" || string(patch[0]["embeds"]) != "[]" {
			t.Errorf("the edit sent flags %s, content %s, embeds %s; want 32768, null, []", patch[0]["flags"], patch[0]["content"], patch[0]["embeds"])
		}
		if n := refusedCalls(h.fk, "PATCH", discordfake.RouteMessage); n != 0 {
			t.Errorf("%d edits refused", n)
		}
	})
	t.Run("a long answer keeps embeds", func(t *testing.T) {
		h := newHarness(t, nil, nil)
		k := dmConv(h)
		ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &working})
		if err != nil {
			t.Fatal(err)
		}
		long := render.Card{Title: "Long", Status: render.StatusDone, Body: strings.Repeat("A paragraph of the long answer.\n\n", 200)}
		out, err := h.ch.Edit(context.Background(), ref, channels.Message{Card: &long})
		if err != nil {
			t.Fatal(err)
		}
		p := h.fk.PostedByBot(k.Chat)
		checkShown(t, p)
		if len(p) != 2 || out.ID() != ref.ID() || p[0].V2() || p[1].V2() || len(p[0].Embeds) == 0 {
			t.Fatalf("after the edit: %d messages, want the two of embeds", len(p))
		}
	})
}

// TestAComponentsV2MessageStaysOne proves an edit never asks a V2 message to drop its flag:
// a card that would be embeds — a working card, a long answer — and text are edited into a V2
// message as V2 (after the one refusal that tells the adapter what the message is), a long one
// continuing in further V2 messages, nothing lost.
func TestAComponentsV2MessageStaysOne(t *testing.T) {
	var long strings.Builder
	for i := range 300 {
		fmt.Fprintf(&long, "Paragraph %03d of the answer.\n\n", i)
	}
	for _, tc := range []struct {
		name  string
		m     channels.Message
		shows []string
	}{
		{"a working card", channels.Message{Card: &render.Card{Title: "Working on it…", Status: render.StatusWorking}}, []string{"Working on it"}},
		{"a long answer", channels.Message{Card: &render.Card{Title: "Long", Status: render.StatusDone, Body: long.String()}},
			[]string{"Paragraph 000", "Paragraph 150", "Paragraph 299"}},
		{"text", channels.Message{Text: "Answered: **two**"}, []string{"Answered: **two**"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			k := dmConv(h)
			card := formCard()
			ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.ch.Edit(context.Background(), ref, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			p := h.fk.PostedByBot(k.Chat)
			checkShown(t, p)
			all := ""
			for i, m := range p {
				if !m.V2() {
					t.Errorf("message %d of %d is not a V2 one", i, len(p))
				}
				all += m.Text()
			}
			if out.ID() != ref.ID() || len(out.IDs) != len(p) {
				t.Errorf("ref %v for %d messages", out.IDs, len(p))
			}
			for _, s := range tc.shows {
				if strings.Count(all, s) != 1 {
					t.Errorf("%q shown %d times", s, strings.Count(all, s))
				}
			}
			if len(discordfake.CustomIDs(p[0].Components)) != 0 {
				t.Error("the form's buttons are still there")
			}
			if n := refusedCalls(h.fk, "PATCH", discordfake.RouteMessage); n != 1 {
				t.Errorf("%d refused edits, want the one that told what the message is", n)
			}
		})
	}
}

// TestCommandReplyCardIsAnEphemeralV2Message proves a card answering a slash command fills the
// deferred (ephemeral) response as a V2 message: the deferral takes no V2 flag, so the edit of
// @original sets it, naming the ephemeral flag it keeps.
func TestCommandReplyCardIsAnEphemeralV2Message(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	h.rec.setOn(func(ctx context.Context, c channels.Channel, in channels.Inbound) error {
		card := render.Card{Title: "Status", Status: render.StatusDone, Body: "All **fine**."}
		_, err := c.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Card: &card})
		return err
	})
	id := h.fk.Slash(ch, alice, "bot", "status", "")
	poll.Until(t, "the reply", func() bool { return h.rec.count() == 1 })
	ix, _ := h.fk.InteractionByID(id)
	r := ix.Replies()
	if len(r) != 1 || !r[0].V2() || !r[0].Ephemeral || !strings.Contains(r[0].Text(), "All **fine**.") {
		t.Fatalf("replies %+v", r)
	}
	patch := bodiesOf(h.fk, "PATCH", discordfake.RouteFollowupMsg)
	if len(patch) != 1 || string(patch[0]["flags"]) != fmt.Sprint(render.DiscordFlagComponentsV2|flagEphemeral) {
		t.Errorf("the edit of @original sent flags %s", patch[0]["flags"])
	}
}

// TestThreadStartSendsTheDocumentedBody proves the thread a mention is answered in is started
// with the body Start Thread from Message documents — name and auto_archive_duration — and not
// discordgo's, whose "invitable" the route does not take (the fake refuses it as Discord's 400).
func TestThreadStartSendsTheDocumentedBody(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	id := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "what is up?\nmore", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv}, channels.Message{Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	var body []byte
	for _, c := range h.fk.Calls() {
		if c.Route == discordfake.RouteThreadFromMsg {
			body = c.Body
		}
	}
	if want := `{"name":"what is up?","auto_archive_duration":1440}`; string(body) != want {
		t.Errorf("thread start body %s, want %s", body, want)
	}
	if th, ok := h.fk.ChannelInfo(id); !ok || th.AutoArchiveDuration != 1440 || len(h.fk.PostedByBot(id)) != 1 {
		t.Errorf("thread %+v %v", th, ok)
	}
}

// TestCommandRegistrationSendsTheDocumentedBody proves the bulk overwrite carries exactly the
// documented fields: per command name, description, type, default_member_permissions (only
// where set) and options; per option type, name and description, options on subcommands only —
// no null, no "required" on a subcommand, no "autocomplete" anywhere it would be false.
func TestCommandRegistrationSendsTheDocumentedBody(t *testing.T) {
	h := newHarness(t, nil, nil)
	specs := []channels.CommandSpec{{Name: "/help", Description: "Show help"}, {Name: "/allow", Description: "Allow a user", AdminOnly: true}}
	if err := h.ch.RegisterCommands(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"bot","description":"Talk to the bot: help, new conversation, cancel, status","type":1,` +
		`"options":[{"type":1,"name":"help","description":"Show help"}]},` +
		`{"name":"botadmin","description":"Bot administration","type":1,"default_member_permissions":"0",` +
		`"options":[{"type":1,"name":"allow","description":"Allow a user",` +
		`"options":[{"type":3,"name":"args","description":"Arguments, as you would type them after the command"}]}]}]`
	if got := string(h.fk.CommandsSent("")); got != want {
		t.Errorf("bulk overwrite body\n%s\nwant\n%s", got, want)
	}
	// Every command the router lists registers in a body the fake, which refuses what the
	// documentation does not have, takes; its fields are the documented ones for their types.
	h2 := newHarness(t, nil, nil)
	if err := h2.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	var cmds []map[string]json.RawMessage
	if err := json.Unmarshal(h2.fk.CommandsSent(""), &cmds); err != nil || len(cmds) != 2 {
		t.Fatalf("registered %s: %v", h2.fk.CommandsSent(""), err)
	}
	var walk func(where string, opts json.RawMessage)
	walk = func(where string, opts json.RawMessage) {
		var os []map[string]json.RawMessage
		if err := json.Unmarshal(opts, &os); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for _, o := range os {
			keys := slices.Sorted(maps.Keys(o))
			switch string(o["type"]) {
			case "1":
				if k := strings.Join(keys, ","); k != "description,name,type" && k != "description,name,options,type" {
					t.Errorf("%s: subcommand fields %s", where, k)
				}
				if sub, ok := o["options"]; ok {
					walk(where+"/"+string(o["name"]), sub)
				}
			case "3":
				if k := strings.Join(keys, ","); k != "description,name,type" {
					t.Errorf("%s: string option fields %s", where, k)
				}
			default:
				t.Errorf("%s: option type %s", where, o["type"])
			}
		}
	}
	for _, c := range cmds {
		for k, v := range c {
			if string(v) == "null" {
				t.Errorf("command %s: %s is null", c["name"], k)
			}
		}
		walk(string(c["name"]), c["options"])
	}
}

// TestModalRoundTripOfAMultiFieldClarification proves a clarification of several fields opens
// as a modal of labels — a string select for each field with options, a paragraph input for the
// text field, the free-text input last — each input named by its field's id, and that the
// submitted modal comes back (labels and all) as the values the router reads: the signed choices
// picked by field id, the typed text by field id.
func TestModalRoundTripOfAMultiFieldClarification(t *testing.T) {
	h := newHarness(t, nil, nil)
	k, msg := cardInThread(t, h)
	form := multiFieldForm()
	h.rec.setOn(func(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
		if in.Interaction == nil || in.Interaction.Data != "open" {
			return nil
		}
		return ch.(channels.FormOpener).OpenForm(ctx, in.Interaction, form)
	})
	ixID := h.fk.Click(k.Thread, msg, alice, "open")
	poll.Until(t, "the click", func() bool { return h.rec.count() == 2 })
	ix, _ := h.fk.InteractionByID(ixID)
	custom, labels, ok := ix.ModalLabels()
	if !ok || len(labels) != 5 {
		t.Fatalf("modal %q of %d components, want 4 fields and the free text", custom, len(labels))
	}
	wantTypes := []int{discordfake.TypeStringSelect, discordfake.TypeStringSelect, discordfake.TypeTextInput, discordfake.TypeStringSelect, discordfake.TypeTextInput}
	for i, l := range labels {
		if l.Type != discordfake.TypeLabel || l.Component == nil || l.Component.Type != wantTypes[i] {
			t.Fatalf("component %d: %+v, want a label around type %d", i, l, wantTypes[i])
		}
		if i < 4 && (l.Component.CustomID != form.Fields[i].ID || l.Label != form.Fields[i].Label) {
			t.Errorf("label %d: %q around %q, want %q around the field id %q", i, l.Label, l.Component.CustomID, form.Fields[i].Label, form.Fields[i].ID)
		}
	}
	option := func(field, i int) string { return labels[field].Component.Options[i].Value }
	sub := h.fk.SubmitValues(k.Thread, msg, alice, custom, map[string][]string{
		"audience": {option(0, 1)},
		"sections": {option(1, 0), option(1, 2)},
		"notes":    {"stress the timeline"},
		"email":    {option(3, 0)},
	})
	if sub == "" {
		t.Fatal("the fake's client would not submit the answers")
	}
	poll.Until(t, "the submit", func() bool { return h.rec.count() == 3 })
	in := lastInbound(h)
	if in.Interaction == nil || in.Interaction.Data != custom || in.Interaction.Message.ID() != msg {
		t.Fatalf("submit = %+v", in.Interaction)
	}
	picked := func(field string) []int {
		var out []int
		for _, v := range in.Interaction.Values[field] {
			id, err := render.DecodeAction(h.key, v)
			if err != nil || id.Kind != render.ActionChoose || id.Token != form.Token {
				t.Errorf("%s: value %q is not a signed choice: %+v %v", field, v, id, err)
				continue
			}
			out = append(out, id.Option)
		}
		return out
	}
	if got := picked("audience"); !slices.Equal(got, []int{1}) {
		t.Errorf("audience %v, want option 1", got)
	}
	if got := picked("sections"); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("sections %v, want options 0 and 2", got)
	}
	if got := picked("email"); !slices.Equal(got, []int{0}) {
		t.Errorf("email %v, want Yes", got)
	}
	if got := in.Interaction.Values["notes"]; len(got) != 1 || got[0] != "stress the timeline" {
		t.Errorf("notes %q", got)
	}
	if len(in.Interaction.Values) != 4 {
		t.Errorf("values %v: the free-text input left empty must not come back", in.Interaction.Values)
	}
}
