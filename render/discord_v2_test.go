package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// validateDiscordV2 checks Components V2 messages against Discord's rules, stated here apart
// from the renderer: the flag IS_COMPONENTS_V2 (1<<15) and then no content and no embeds
// (Create Message); at most 40 components, nested ones counted, and 4,000 characters across the
// text displays (Component Reference; the discord.js guide for the text total); top-level
// components of the message kinds only, a container holding rows, text displays, sections,
// media galleries, separators and files, rows of up to five buttons or one select; custom_ids
// of 1–100 characters, unique in the message; allowed_mentions parsing nothing and text that
// cannot ping.
func validateDiscordV2(msgs []DiscordMessage) violations {
	var v violations
	v.check(len(msgs) > 0, "no messages")
	for mi, m := range msgs {
		w := fmt.Sprintf("message %d", mi)
		v.check(m.Flags&(1<<15) != 0, "%s: without the IS_COMPONENTS_V2 flag", w)
		v.check(m.Content == "" && len(m.Embeds) == 0, "%s: content or embeds beside V2 components", w)
		v.check(m.AllowedMentions.Parse != nil && len(m.AllowedMentions.Parse) == 0, "%s: allowed_mentions must parse nothing", w)
		v.check(len(m.Components) > 0, "%s: no components", w)
		count, text := 0, 0
		ids := map[string]bool{}
		var walk func(where string, cs []DiscordComponent, parent int)
		walk = func(where string, cs []DiscordComponent, parent int) {
			for ci, c := range cs {
				cw := fmt.Sprintf("%s/%d(type %d)", where, ci, c.Type)
				count++
				if c.CustomID != "" {
					v.check(len(c.CustomID) <= 100, "%s: custom_id of %d", cw, len(c.CustomID))
					v.check(!ids[c.CustomID], "%s: custom_id used twice", cw)
					ids[c.CustomID] = true
				}
				switch parent {
				case 0:
					v.check(c.Type == DiscordActionRow || c.Type == DiscordTextDisplay || c.Type == DiscordSection ||
						c.Type == 12 || c.Type == 13 || c.Type == DiscordSeparator || c.Type == DiscordContainer, "%s: not a top-level component", cw)
				case DiscordContainer:
					v.check(c.Type == DiscordActionRow || c.Type == DiscordTextDisplay || c.Type == DiscordSection ||
						c.Type == 12 || c.Type == 13 || c.Type == DiscordSeparator, "%s: not a container's child", cw)
				}
				switch c.Type {
				case DiscordTextDisplay:
					v.check(strings.TrimSpace(c.Content) != "", "%s: empty text display", cw)
					text += Width(c.Content)
					v.mentions(cw, c.Content)
				case DiscordContainer:
					v.check(c.AccentColor == nil || (*c.AccentColor >= 0 && *c.AccentColor <= 0xFFFFFF), "%s: accent colour", cw)
					v.check(len(c.Components) > 0, "%s: empty container", cw)
					walk(cw, c.Components, DiscordContainer)
				case DiscordSeparator:
					v.check(c.Spacing == 0 || c.Spacing == 1 || c.Spacing == 2, "%s: spacing %d", cw, c.Spacing)
				case DiscordActionRow:
					validateDiscordRow(&v, cw, c)
					count += len(c.Components)
				default:
					v.check(false, "%s: the renderer makes no such component", cw)
				}
			}
		}
		walk(w, m.Components, 0)
		v.check(count <= 40, "%s: %d components, limit 40", w, count)
		v.check(text <= 4000, "%s: %d characters of text displays, limit 4000", w, text)
	}
	return v
}

// v2Text is everything the text displays of msgs show, in order.
func v2Text(msgs []DiscordMessage) string {
	var b strings.Builder
	var walk func(cs []DiscordComponent)
	walk = func(cs []DiscordComponent) {
		for _, c := range cs {
			if c.Type == DiscordTextDisplay {
				b.WriteString(c.Content + "\n")
			}
			walk(c.Components)
		}
	}
	for _, m := range msgs {
		walk(m.Components)
	}
	return b.String()
}

// topRows are the action rows at the top level of m.
func topRows(m DiscordMessage) []DiscordComponent {
	var out []DiscordComponent
	for _, c := range m.Components {
		if c.Type == DiscordActionRow {
			out = append(out, c)
		}
	}
	return out
}

// TestGoldenCardsDiscordV2 renders every card kind as Components V2, compares with the golden
// files (testdata/*.discordv2.golden) and checks each message against the V2 limits.
func TestGoldenCardsDiscordV2(t *testing.T) {
	for _, gc := range goldenCards {
		t.Run(gc.name, func(t *testing.T) {
			msgs, err := DiscordV2(gc.card, testKey)
			if err != nil {
				t.Fatal(err)
			}
			report(t, validateDiscordV2(msgs))
			checkGolden(t, gc.name+".discordv2", marshal(t, map[string]any{"messages": msgs}))
		})
	}
}

// TestDiscordV2ShowsTheCardInOrder proves one V2 message shows a card's parts as the embeds do,
// in their order — title, subagent results, body, fields, form, footer — in a container of the
// status's colour, with the action rows (the same signed ids as Discord's) after it.
func TestDiscordV2ShowsTheCardInOrder(t *testing.T) {
	card := Card{Title: "Fact check", Status: StatusDone, Body: "The **answer**.", Footer: footer,
		Subagents: []SubagentResult{{Name: "web", StopReason: "completed", Summary: "Found it."}},
		Fields:    []Field{{Label: "Sources", Value: "3"}},
		Actions:   []Action{{Label: "Again", ID: ActionID{Kind: ActionButton, Token: "r1"}}}}
	msgs, err := DiscordV2(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordV2(msgs))
	if len(msgs) != 1 || len(msgs[0].Components) != 2 {
		t.Fatalf("want one message of a container and a row, got %+v", msgs)
	}
	box := msgs[0].Components[0]
	if box.Type != DiscordContainer || box.AccentColor == nil || *box.AccentColor != StatusColor(StatusDone) {
		t.Fatalf("first component %+v, want a container of the done colour", box)
	}
	text := v2Text(msgs)
	order := []string{"### ✅ Fact check", "**✅ web · completed**\nFound it.", "The **answer**.", "**Sources**\n3", "-# Done · r-7f3a9c · 1m23s"}
	at := 0
	for _, want := range order {
		i := strings.Index(text[at:], want)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", want, text)
		}
		at += i + len(want)
	}
	legacy, _ := Discord(card, testKey)
	if got, want := string(marshal(t, topRows(msgs[0]))), string(marshal(t, legacy[0].Components)); got != want {
		t.Errorf("V2 rows %s, want the embeds' rows %s", got, want)
	}
}

// TestDiscordV2LongAnswerSplitsWithinLimits proves an answer longer than one V2 message takes
// continues in further messages, each within 4,000 characters of text and 40 components,
// nothing lost or doubled, a code block that fits one text display kept whole, the title on the
// first message and the footer and the buttons on the last.
func TestDiscordV2LongAnswerSplitsWithinLimits(t *testing.T) {
	var code strings.Builder
	for i := range 60 {
		fmt.Fprintf(&code, "line(%02d) // some code\n", i)
	}
	var body strings.Builder
	for i := range 300 {
		fmt.Fprintf(&body, "Paragraph %03d says something.\n\n", i)
		if i == 150 {
			body.WriteString("```go\n" + code.String() + "```\n\n")
		}
	}
	card := Card{Title: "Long", Status: StatusDone, Body: body.String(), Footer: footer,
		Actions: []Action{{Label: "Again", ID: ActionID{Kind: ActionButton, Token: "r1"}}}}
	msgs, err := DiscordV2(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordV2(msgs))
	if len(msgs) < 3 {
		t.Fatalf("%d messages for %d characters", len(msgs), body.Len())
	}
	all := v2Text(msgs)
	for i := range 300 {
		if n := strings.Count(all, fmt.Sprintf("Paragraph %03d says", i)); n != 1 {
			t.Fatalf("paragraph %d shown %d times", i, n)
		}
	}
	whole := 0
	for i, m := range msgs {
		if strings.Contains(v2Text([]DiscordMessage{m}), "```go\n"+code.String()+"```") {
			whole++
		}
		if (len(topRows(m)) > 0) != (i == len(msgs)-1) {
			t.Errorf("message %d of %d has %d rows: they ride on the last", i, len(msgs), len(topRows(m)))
		}
	}
	if whole != 1 {
		t.Errorf("the code block is whole in %d messages, want 1", whole)
	}
	if first, last := v2Text(msgs[:1]), v2Text(msgs[len(msgs)-1:]); !strings.HasPrefix(first, "### ") || !strings.Contains(last, "-# Done") {
		t.Errorf("title or footer misplaced: first %.40q…, last …%.40q", first, last[max(0, len(last)-40):])
	}
}

// TestDiscordV2ManySubagentsKeepTheComponentLimit proves a card of more text displays than 40
// components hold continues in further messages rather than passing the limit.
func TestDiscordV2ManySubagentsKeepTheComponentLimit(t *testing.T) {
	var sas []SubagentResult
	for i := range 50 {
		sas = append(sas, SubagentResult{Name: fmt.Sprintf("s%02d", i), StopReason: "completed", Summary: "ok"})
	}
	msgs, err := DiscordV2(Card{Title: "Many", Status: StatusDone, Subagents: sas}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordV2(msgs))
	if len(msgs) < 2 {
		t.Fatalf("%d message(s) for 50 subagents", len(msgs))
	}
	for i := range 50 {
		if n := strings.Count(v2Text(msgs), fmt.Sprintf("s%02d · completed", i)); n != 1 {
			t.Fatalf("subagent %d shown %d times", i, n)
		}
	}
}

// TestDiscordV2RowsThatDoNotFitTakeAMessage proves action rows that would pass 40 components
// beside a full container go in a message of their own, still a V2 one.
func TestDiscordV2RowsThatDoNotFitTakeAMessage(t *testing.T) {
	var sas []SubagentResult
	for i := range 18 { // a separator and 18 text displays, with the title, footer and its separator: 22 of 40
		sas = append(sas, SubagentResult{Name: fmt.Sprintf("s%02d", i), StopReason: "completed", Summary: "ok"})
	}
	var actions []Action
	for i := range 20 { // 4 rows of 5: 24 components
		actions = append(actions, Action{Label: fmt.Sprint("a", i), ID: ActionID{Kind: ActionButton, Token: "r", Option: i}})
	}
	msgs, err := DiscordV2(Card{Title: "Rows", Status: StatusDone, Subagents: sas, Actions: actions}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordV2(msgs))
	if len(msgs) != 2 || len(topRows(msgs[1])) != 4 || len(msgs[1].Components) != 4 {
		t.Fatalf("want the rows alone in a second message, got %d messages", len(msgs))
	}
}

func TestDiscordV2RefusesWhatDiscordRefuses(t *testing.T) {
	if _, err := DiscordV2(Card{Status: StatusDone}, testKey); !errors.Is(err, ErrInvalidCard) {
		t.Errorf("a card without a title: %v, want ErrInvalidCard", err)
	}
	var actions []Action
	for i := range 26 {
		actions = append(actions, Action{Label: "a", ID: ActionID{Kind: ActionButton, Token: "r", Option: i}})
	}
	if _, err := DiscordV2(Card{Title: "t", Status: StatusDone, Actions: actions}, testKey); !errors.Is(err, ErrInvalidCard) {
		t.Errorf("26 buttons: %v, want ErrInvalidCard", err)
	}
	if _, err := DiscordV2(Card{Title: "t", Status: StatusDone, Actions: actions[:1]}, Key{}); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v, want ErrNoKey", err)
	}
}

func TestDiscordV2TextSplitsWithinTheTextLimit(t *testing.T) {
	text := strings.Repeat("A sentence of the answer. ", 400) // ~10,400 characters
	msgs := DiscordV2Text(text)
	report(t, validateDiscordV2(msgs))
	if len(msgs) < 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	if shown(v2Text(msgs)) != shown(ConvertMarkdown(text, DialectDiscord)) {
		t.Error("the text shown is not the text given: something was lost or doubled at the cuts")
	}
	if len(DiscordV2Text(" \n")) != 0 {
		t.Error("blank text gave messages")
	}
}

// TestDiscordFormModalLabelsAFieldEach proves a clarification of several fields opens as a
// modal of labels — a string select for each field with options (signed choices, those chosen
// already ticked; none needed when optional), a paragraph input for a text field — and a
// free-text label only while a modal's five components leave room.
func TestDiscordFormModalLabelsAFieldEach(t *testing.T) {
	long := strings.Repeat("Which of these would you like to see ", 3) // past a label's 45 characters
	card := Card{Title: "Details", Status: StatusWaiting, Form: &Form{Token: testToken, AllowFreeText: true, Fields: []FormField{
		{ID: "a", Label: "Audience", Kind: KindChoice, Options: []string{"eng", "exec"}, Required: true},
		{ID: "s", Label: long, Kind: KindMultiChoice, Options: []string{"x", "y", "z"}, Selected: []int{1}},
		{ID: "n", Label: "Notes", Kind: KindText},
		{ID: "e", Label: "Email it?", Kind: KindConfirm, Required: true},
	}}}
	m, err := DiscordFormModal(card, testKey, false)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordModal(m))
	if len(m.Components) != 5 {
		t.Fatalf("%d labels, want 4 fields and the free text", len(m.Components))
	}
	kinds := []int{DiscordStringSelect, DiscordStringSelect, DiscordTextInput, DiscordStringSelect, DiscordTextInput}
	for i, l := range m.Components {
		if l.Type != DiscordLabel || l.Component == nil || l.Component.Type != kinds[i] {
			t.Fatalf("label %d: %+v, want a label around type %d", i, l, kinds[i])
		}
	}
	multi := m.Components[1]
	if multi.Label != truncate(long, DiscordMaxInputLabel) || multi.Description != truncate(long, DiscordMaxLabelDescription) {
		t.Errorf("a long label's description %q, want the label whole", multi.Description)
	}
	sel := multi.Component
	if sel.MinValues == nil || *sel.MinValues != 0 || sel.MaxValues == nil || *sel.MaxValues != 3 || *sel.Required {
		t.Errorf("optional multi-select: %+v", sel)
	}
	for j, o := range sel.Options {
		id, err := DecodeAction(testKey, o.Value)
		if err != nil || id.Kind != ActionChoose || id.Field != 1 || id.Option != j || id.Token != testToken {
			t.Errorf("option %d value %q: %+v %v", j, o.Value, id, err)
		}
		if o.Default != (j == 1) {
			t.Errorf("option %d default %v, want the selected one ticked", j, o.Default)
		}
	}
	confirm := m.Components[3].Component
	if len(confirm.Options) != 2 || confirm.Options[0].Label != "Yes" || !*confirm.Required || confirm.MinValues != nil {
		t.Errorf("confirm select: %+v", confirm)
	}
	card.Form.Fields = append(card.Form.Fields, FormField{ID: "f", Label: "Fifth", Kind: KindText})
	m, err = DiscordFormModal(card, testKey, false)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscordModal(m))
	if len(m.Components) != 5 || m.Components[4].Label != "Fifth" {
		t.Errorf("five fields: %d labels, want the five fields and no free text", len(m.Components))
	}
}
