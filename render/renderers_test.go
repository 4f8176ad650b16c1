package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func formCard(fields ...FormField) Card {
	return Card{Title: "Q", Status: StatusWaiting, Form: &Form{Token: testToken, Question: "Pick", Fields: fields}}
}

func TestCardValidateRejectsWhatNoPlatformCanShow(t *testing.T) {
	choice := FormField{Label: "x", Kind: KindChoice, Options: []string{"a"}}
	tests := []struct {
		name string
		card Card
	}{
		{"unknown status", Card{Title: "t", Status: "busy"}},
		{"empty title", Card{Status: StatusDone}},
		{"action without label", Card{Title: "t", Status: StatusDone, Actions: []Action{{}}}},
		{"form without fields", formCard()},
		{"too many fields", formCard(choice, choice, choice, choice, choice, choice)},
		{"choice without options", formCard(FormField{Label: "x", Kind: KindChoice})},
		{"too many options", formCard(FormField{Label: "x", Kind: KindChoice, Options: make([]string, 26)})},
		{"unknown kind", formCard(FormField{Label: "x", Kind: "slider"})},
		{"empty option", formCard(FormField{Label: "x", Kind: KindChoice, Options: []string{"a", " "}})},
		{"field without label", formCard(FormField{Kind: KindText})},
		{"bad token", Card{Title: "t", Status: StatusWaiting, Form: &Form{Token: "has space", Fields: []FormField{choice}}}},
		{"step out of range", Card{Title: "t", Status: StatusWaiting, Form: &Form{Token: "t", Step: 1, Fields: []FormField{choice}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.card.Validate(); !errors.Is(err, ErrInvalidCard) {
				t.Fatalf("Validate = %v, want ErrInvalidCard", err)
			}
			if _, err := Slack(tt.card, testKey); !errors.Is(err, ErrInvalidCard) {
				t.Fatalf("Slack = %v", err)
			}
			if _, err := Discord(tt.card, testKey); !errors.Is(err, ErrInvalidCard) {
				t.Fatalf("Discord = %v", err)
			}
			if _, err := Telegram(tt.card, testKey); !errors.Is(err, ErrInvalidCard) {
				t.Fatalf("Telegram = %v", err)
			}
		})
	}
}

func TestRenderersRefuseInteractiveCardsWithoutAKey(t *testing.T) {
	card := goldenCards[2].card
	if _, err := Slack(card, Key{}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Slack: %v", err)
	}
	if _, err := Discord(card, Key{}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Discord: %v", err)
	}
	if _, err := Telegram(card, Key{}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Telegram: %v", err)
	}
	if len(Plain(card)) == 0 {
		t.Fatal("Plain must render without a key: it is the fallback")
	}
	if _, err := Slack(Card{Title: "t", Status: StatusDone}, Key{}); err != nil {
		t.Fatalf("a card without interactive parts needs no key: %v", err)
	}
}

func TestSlackSingleChoiceIsButtonsAndSeveralFieldsOpenAModal(t *testing.T) {
	msgs, _ := Slack(goldenCards[2].card, testKey)
	var buttons int
	for _, b := range msgs[0].Blocks {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				if e.(SlackElement).Type == "button" {
					buttons++
				}
			}
		}
	}
	if buttons != 3 {
		t.Fatalf("want 3 option buttons, got %d", buttons)
	}
	many := formCard(FormField{Label: "x", Kind: KindChoice, Options: strings.Split("a b c d e f", " ")})
	msgs, _ = Slack(many, testKey)
	if el := msgs[0].Blocks[len(msgs[0].Blocks)-2].Elements[0].(SlackElement); el.Type != "static_select" || len(el.Options) != 6 {
		t.Fatalf("more than 5 options should be a select, got %+v", el)
	}
	msgs, _ = Slack(goldenCards[3].card, testKey)
	open := msgs[0].Blocks[len(msgs[0].Blocks)-3].Elements[0].(SlackElement)
	if id, err := DecodeAction(testKey, open.ActionID); err != nil || id.Kind != ActionOpenForm {
		t.Fatalf("several fields should offer ActionOpenForm, got %+v %v", id, err)
	}
	view, _ := SlackModal(goldenCards[3].card, testKey)
	var kinds []string
	for _, b := range view.Blocks {
		if b.Type == "input" {
			kinds = append(kinds, b.Element.Type)
		}
	}
	if got := strings.Join(kinds, ","); got != "radio_buttons,checkboxes,plain_text_input,radio_buttons,plain_text_input" {
		t.Fatalf("modal inputs: %s", got)
	}
}

func TestSlackCardPastFiftyBlocksContinuesInAnotherMessage(t *testing.T) {
	card := Card{Title: "t", Status: StatusDone, Subagents: subagents(60)}
	msgs, err := Slack(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("want 2 messages, got %d", len(msgs))
	}
	report(t, validateSlack(msgs))
}

func TestDiscordEmbedColourFollowsStatus(t *testing.T) {
	for st, style := range statusStyles {
		msgs, err := Discord(Card{Title: "t", Status: st}, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if got := msgs[0].Embeds[0].Color; got != style.color || got == 0 {
			t.Fatalf("%s: colour %#x", st, got)
		}
	}
}

func TestDiscordButtonsFiveARowAndTooManyRowsRefused(t *testing.T) {
	var actions []Action
	for i := 0; i < 12; i++ {
		actions = append(actions, Action{Label: fmt.Sprint("a", i), ID: ActionID{Kind: ActionButton, Token: "r", Option: i}})
	}
	msgs, err := Discord(Card{Title: "t", Status: StatusDone, Actions: actions}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	rows := msgs[0].Components
	if len(rows) != 3 || len(rows[0].Components) != 5 || len(rows[2].Components) != 2 {
		t.Fatalf("rows: %+v", rows)
	}
	actions = append(actions, actions...)
	actions = append(actions, actions[0]) // 25 buttons: 5 full rows, the most Discord takes
	if _, err := Discord(Card{Title: "t", Status: StatusDone, Actions: actions}, testKey); err != nil {
		t.Fatalf("25 buttons fit in 5 rows: %v", err)
	}
	actions = append(actions, actions[0])
	if _, err := Discord(Card{Title: "t", Status: StatusDone, Actions: actions}, testKey); !errors.Is(err, ErrInvalidCard) {
		t.Fatalf("26 buttons need 6 rows; want ErrInvalidCard, got %v", err)
	}
}

func TestDiscordFreeTextModalAndFormModal(t *testing.T) {
	m, err := DiscordFormModal(goldenCards[2].card, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Components) != 1 || m.Components[0].Type != DiscordLabel || m.Components[0].Component == nil ||
		m.Components[0].Component.Type != DiscordTextInput {
		t.Fatalf("free-text modal: %+v", m)
	}
	report(t, validateDiscordModal(m))
	m, _ = DiscordFormModal(goldenCards[3].card, testKey, false)
	if len(m.Components) != 5 { // 4 fields + free text
		t.Fatalf("form modal labels: %d", len(m.Components))
	}
	report(t, validateDiscordModal(m))
}

func TestTelegramFormAsksOneFieldAtATime(t *testing.T) {
	card := goldenCards[3].card
	for step, want := range []string{"(1/4)", "(2/4)", "(3/4)", "(4/4)"} {
		f := *card.Form
		f.Step = step
		card.Form = &f
		msgs, err := Telegram(card, testKey)
		if err != nil {
			t.Fatal(err)
		}
		last := msgs[len(msgs)-1]
		if !strings.Contains(last.Text, want) || !strings.Contains(last.Text, EscapeHTML(f.Fields[step].Label)) {
			t.Fatalf("step %d text: %s", step, last.Text)
		}
		for _, other := range f.Fields {
			if other.Label != f.Fields[step].Label && strings.Contains(last.Text, other.Label) {
				t.Fatalf("step %d shows another field %q", step, other.Label)
			}
		}
		if last.ReplyMarkup != nil {
			for _, row := range last.ReplyMarkup.InlineKeyboard {
				for _, b := range row {
					id, err := DecodeAction(testKey, b.CallbackData)
					if err != nil || id.Field != step {
						t.Fatalf("step %d button %q decodes to %+v, %v", step, b.Text, id, err)
					}
				}
			}
		}
	}
}

func TestPlainFormOffersNumberedOptions(t *testing.T) {
	got := strings.Join(Plain(goldenCards[2].card), "\n")
	for _, want := range []string{"1. staging", "2. production", "3. canary", "Reply 1–3 or type your answer."} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q in:\n%s", want, got)
		}
	}
}
