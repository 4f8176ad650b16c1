package render

import (
	"strconv"
	"strings"
)

// Telegram limits this renderer keeps to.
const (
	TelegramMaxText         = 4096 // message text
	TelegramMaxCallbackData = 64   // callback_data bytes
	TelegramMaxButtonText   = 64   // button text (kept short to stay readable)
)

// TelegramButton is an inline keyboard button carrying signed callback data.
type TelegramButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// TelegramKeyboard is an inline keyboard markup.
type TelegramKeyboard struct {
	InlineKeyboard [][]TelegramButton `json:"inline_keyboard"`
}

// TelegramMessage is the text part of a sendMessage / editMessageText call:
// HTML text within TelegramMaxText and, on the last message of a card, the
// inline keyboard.
type TelegramMessage struct {
	Text        string            `json:"text"`
	ParseMode   string            `json:"parse_mode"`
	ReplyMarkup *TelegramKeyboard `json:"reply_markup,omitempty"`
}

func tgEsc(s string) string { return EscapeHTML(NeutralizeUsernames(NeutralizeMentions(s))) }

// Telegram renders a card as HTML-parse-mode messages, chunked to
// TelegramMaxText with tags closed and reopened at each cut; the inline
// keyboard rides on the last. A form is asked one field at a time: field
// Form.Step, with its options as buttons (ActionChoose), toggles and a Done
// button for multi_choice (ActionToggle, ActionSubmit), Yes/No for confirm,
// a Skip button for optional fields (ActionSkip), and a hint to reply with
// text for text fields and free text. Callback data are signed with k and fit
// TelegramMaxCallbackData bytes.
func Telegram(c Card, k Key) ([]TelegramMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &signer{key: k}
	var b strings.Builder
	b.WriteString("<b>" + tgEsc(headline(c)) + "</b>")
	for _, sa := range c.Subagents {
		b.WriteString("\n\n" + subagentIcon(sa) + " <b>" + tgEsc(sa.Name) + "</b> · <code>" + tgEsc(subagentState(sa)) + "</code>")
		if sa.Summary != "" {
			b.WriteString("\n" + ConvertMarkdown(sa.Summary, DialectTelegram))
		}
		for _, f := range sa.Structured {
			b.WriteString("\n    <b>" + tgEsc(f.Label) + ":</b> " + tgEsc(f.Value))
		}
	}
	if c.Body != "" {
		b.WriteString("\n\n" + ConvertMarkdown(c.Body, DialectTelegram))
	}
	if len(c.Fields) > 0 {
		b.WriteString("\n")
		for _, f := range c.Fields {
			b.WriteString("\n<b>" + tgEsc(f.Label) + ":</b> " + tgEsc(f.Value))
		}
	}
	var kb [][]TelegramButton
	if c.Form != nil {
		b.WriteString("\n\n" + telegramFormText(c.Form))
		kb = telegramKeyboard(c.Form, s)
	}
	var actions []TelegramButton
	for _, a := range c.Actions {
		actions = append(actions, TelegramButton{Text: truncate(a.Label, TelegramMaxButtonText), CallbackData: s.sign(a.ID)})
	}
	for start := 0; start < len(actions); start += 3 {
		kb = append(kb, actions[start:min(len(actions), start+3)])
	}
	status, run, elapsed := footerParts(c)
	if run != "" {
		run = "run <code>" + EscapeHTML(run) + "</code>"
	}
	b.WriteString("\n\n<i>" + joinNonEmpty(" · ", status, run, elapsed) + "</i>")
	if s.err != nil {
		return nil, s.err
	}
	var msgs []TelegramMessage
	for _, part := range Chunk(b.String(), TelegramMaxText, DialectTelegram) {
		msgs = append(msgs, TelegramMessage{Text: part, ParseMode: "HTML"})
	}
	if len(kb) > 0 {
		msgs[len(msgs)-1].ReplyMarkup = &TelegramKeyboard{InlineKeyboard: kb}
	}
	return msgs, nil
}

// telegramFormText is the question and the field being asked.
func telegramFormText(f *Form) string {
	var b strings.Builder
	if f.Question != "" {
		b.WriteString(ConvertMarkdown(f.Question, DialectTelegram) + "\n\n")
	}
	fld := f.Fields[f.Step]
	if len(f.Fields) > 1 {
		b.WriteString("<i>(" + strconv.Itoa(f.Step+1) + "/" + strconv.Itoa(len(f.Fields)) + ")</i> ")
	}
	b.WriteString("<b>" + tgEsc(fld.Label) + "</b>")
	if !fld.Required {
		b.WriteString(" <i>(optional)</i>")
	}
	switch fld.Kind {
	case KindText:
		b.WriteString("\n<i>Reply to this message with your answer.</i>")
	case KindMultiChoice:
		b.WriteString("\n<i>Tick all that apply, then press Done.</i>")
	}
	if f.AllowFreeText && fld.Kind != KindText {
		b.WriteString("\n<i>Or reply with your answer in your own words.</i>")
	}
	return b.String()
}

func telegramKeyboard(f *Form, s *signer) [][]TelegramButton {
	i := f.Step
	fld := f.Fields[i]
	id := func(kind ActionKind, opt int) string {
		return s.sign(ActionID{Kind: kind, Token: f.Token, Field: i, Option: opt})
	}
	var kb [][]TelegramButton
	switch fld.Kind {
	case KindConfirm:
		kb = append(kb, []TelegramButton{{Text: "Yes", CallbackData: id(ActionChoose, 0)}, {Text: "No", CallbackData: id(ActionChoose, 1)}})
	case KindChoice:
		for j, o := range fld.Options {
			kb = append(kb, []TelegramButton{{Text: truncate(o, TelegramMaxButtonText), CallbackData: id(ActionChoose, j)}})
		}
	case KindMultiChoice:
		for j, o := range fld.Options {
			mark := "▫️ "
			if fld.isSelected(j) {
				mark = "✅ "
			}
			kb = append(kb, []TelegramButton{{Text: truncate(mark+o, TelegramMaxButtonText), CallbackData: id(ActionToggle, j)}})
		}
		kb = append(kb, []TelegramButton{{Text: "Done", CallbackData: id(ActionSubmit, 0)}})
	}
	if !fld.Required {
		kb = append(kb, []TelegramButton{{Text: "Skip", CallbackData: id(ActionSkip, 0)}})
	}
	return kb
}
