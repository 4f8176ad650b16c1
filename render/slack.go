package render

import (
	"fmt"
	"strconv"
	"strings"
)

// Slack Block Kit limits this renderer keeps to.
const (
	SlackMaxBlocks       = 50   // blocks per message
	SlackMaxModalBlocks  = 100  // blocks per modal view
	SlackMaxSectionText  = 3000 // section text
	SlackMaxFieldText    = 2000 // each section field
	SlackMaxFields       = 10   // fields per section
	SlackMaxHeader       = 150  // header text
	SlackMaxButtonText   = 75   // button and option text
	SlackMaxActions      = 25   // elements per actions block
	SlackMaxContextItems = 10   // elements per context block
	SlackMaxModalTitle   = 24   // modal title, submit and close
	SlackMaxInputLabel   = 2000 // input block label
	SlackMaxSelectOpts   = 100  // options of a select
	SlackMaxRadioOpts    = 10   // options of radio buttons and checkboxes
	SlackMaxFallbackText = 3000 // the message's notification text (kept short)
)

// SlackText is a Block Kit text object ("plain_text" or "mrkdwn").
type SlackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

// SlackOption is an option of a select, radio group or checkbox group.
type SlackOption struct {
	Text  SlackText `json:"text"`
	Value string    `json:"value"`
}

// SlackElement is an interactive element: "button", "static_select",
// "multi_static_select", "radio_buttons", "checkboxes" or "plain_text_input".
type SlackElement struct {
	Type        string        `json:"type"`
	Text        *SlackText    `json:"text,omitempty"`
	ActionID    string        `json:"action_id,omitempty"`
	Value       string        `json:"value,omitempty"`
	Style       string        `json:"style,omitempty"`
	Placeholder *SlackText    `json:"placeholder,omitempty"`
	Options     []SlackOption `json:"options,omitempty"`
	Multiline   bool          `json:"multiline,omitempty"`
	MaxLength   int           `json:"max_length,omitempty"`
}

// SlackBlock is one Block Kit layout block: "header", "section", "divider",
// "context", "actions" or "input". Elements holds SlackText values in a
// context block and SlackElement values in an actions block.
type SlackBlock struct {
	Type     string        `json:"type"`
	BlockID  string        `json:"block_id,omitempty"`
	Text     *SlackText    `json:"text,omitempty"`
	Fields   []SlackText   `json:"fields,omitempty"`
	Elements []any         `json:"elements,omitempty"`
	Label    *SlackText    `json:"label,omitempty"`
	Element  *SlackElement `json:"element,omitempty"`
	Optional bool          `json:"optional,omitempty"`
}

// SlackMessage is the body of chat.postMessage / chat.update: Text is the
// notification fallback, Blocks the card (at most SlackMaxBlocks).
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackView is a modal view for views.open: the whole form as input blocks.
// CallbackID is the signed ActionSubmit id of the form; each input's action_id
// is a signed ActionText or ActionSelect id for its field, and every option
// value is a signed ActionChoose id.
type SlackView struct {
	Type       string       `json:"type"`
	CallbackID string       `json:"callback_id"`
	Title      SlackText    `json:"title"`
	Submit     *SlackText   `json:"submit,omitempty"`
	Close      *SlackText   `json:"close,omitempty"`
	Blocks     []SlackBlock `json:"blocks"`
}

func plainText(s string, limit int) *SlackText {
	return &SlackText{Type: "plain_text", Text: truncate(s, limit), Emoji: true}
}

func mrkdwn(s string, limit int) *SlackText {
	return &SlackText{Type: "mrkdwn", Text: truncateMarkup(s, limit, DialectSlack)}
}

func slackEsc(s string) string { return EscapeSlack(NeutralizeMentions(s)) }

func slackStyle(s ButtonStyle) string {
	switch s {
	case StylePrimary:
		return "primary"
	case StyleDanger:
		return "danger"
	}
	return ""
}

// Slack renders a card as Block Kit messages. Usually there is one; a card
// with more than SlackMaxBlocks blocks continues in further messages, to be
// posted in order after the first. Every text respects Slack's limits (section
// text is chunked, never cut inside a code block). A form with a single choice
// or confirm field is answered by buttons (a select past 5 options) in the
// message; any other form shows an "Answer…" button (ActionOpenForm) whose click
// should open SlackModal. Interactive ids are signed with k. An invalid card or
// a missing key is an error; then send Plain instead.
func Slack(c Card, k Key) ([]SlackMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &signer{key: k}
	var blocks []SlackBlock
	section := func(text string) {
		for _, part := range Chunk(text, SlackMaxSectionText, DialectSlack) {
			blocks = append(blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: part}})
		}
	}
	blocks = append(blocks, SlackBlock{Type: "header", Text: plainText(headline(c), SlackMaxHeader)})
	if len(c.Subagents) > 0 {
		for _, sa := range c.Subagents {
			blocks = append(blocks, slackSubagent(sa)...)
		}
		blocks = append(blocks, SlackBlock{Type: "divider"})
	}
	if c.Body != "" {
		section(ConvertMarkdown(c.Body, DialectSlack))
	}
	blocks = append(blocks, slackFields(c.Fields)...)
	if c.Form != nil {
		blocks = append(blocks, slackForm(c.Form, s)...)
	}
	for start := 0; start < len(c.Actions); start += SlackMaxActions {
		var els []any
		for i, a := range c.Actions[start:min(len(c.Actions), start+SlackMaxActions)] {
			els = append(els, SlackElement{Type: "button", Text: plainText(a.Label, SlackMaxButtonText),
				ActionID: s.sign(a.ID), Value: strconv.Itoa(start + i), Style: slackStyle(a.Style)})
		}
		blocks = append(blocks, SlackBlock{Type: "actions", Elements: els})
	}
	status, run, elapsed := footerParts(c)
	if run != "" {
		run = "run `" + EscapeSlack(run) + "`"
	}
	blocks = append(blocks, SlackBlock{Type: "context", Elements: []any{
		SlackText{Type: "mrkdwn", Text: joinNonEmpty(" · ", status, run, elapsed)},
	}})
	if s.err != nil {
		return nil, s.err
	}
	// The notification text is parsed like mrkdwn, so it is escaped too.
	fallback := truncateMarkup(EscapeSlack(headline(c)+" — "+status), SlackMaxFallbackText, DialectSlack)
	var msgs []SlackMessage
	for start := 0; start < len(blocks); start += SlackMaxBlocks {
		text := fallback
		if start > 0 {
			text = truncateMarkup(EscapeSlack(headline(c)+" (continued)"), SlackMaxFallbackText, DialectSlack)
		}
		msgs = append(msgs, SlackMessage{Text: text, Blocks: blocks[start:min(len(blocks), start+SlackMaxBlocks)]})
	}
	return msgs, nil
}

// slackFieldText is a bold label over a value, for a section field.
func slackFieldText(f Field, limit int) SlackText {
	text := slackEsc(orDash(f.Value))
	if label := strings.TrimSpace(f.Label); label != "" {
		text = "*" + slackEsc(label) + "*\n" + text
	}
	return SlackText{Type: "mrkdwn", Text: truncateMarkup(text, limit, DialectSlack)}
}

// slackFields lays inline fields out in section fields (10 a section) and
// the others as a section each.
func slackFields(fields []Field) []SlackBlock {
	var blocks []SlackBlock
	var run []SlackText
	flush := func() {
		if len(run) > 0 {
			blocks = append(blocks, SlackBlock{Type: "section", Fields: run})
			run = nil
		}
	}
	for _, f := range fields {
		if !f.Inline {
			flush()
			t := slackFieldText(f, SlackMaxSectionText)
			blocks = append(blocks, SlackBlock{Type: "section", Text: &t})
			continue
		}
		run = append(run, slackFieldText(f, SlackMaxFieldText))
		if len(run) == SlackMaxFields {
			flush()
		}
	}
	flush()
	return blocks
}

func slackSubagent(sa SubagentResult) []SlackBlock {
	head := subagentIcon(sa) + " *" + slackEsc(sa.Name) + "* · `" + slackEsc(subagentState(sa)) + "`"
	if sa.Summary != "" {
		head += "\n" + ConvertMarkdown(sa.Summary, DialectSlack)
	}
	first := SlackBlock{Type: "section", Text: mrkdwn(head, SlackMaxSectionText)}
	var more []SlackBlock
	for i, f := range sa.Structured {
		t := slackFieldText(Field{Label: f.Label, Value: f.Value}, SlackMaxFieldText)
		if i < SlackMaxFields {
			first.Fields = append(first.Fields, t)
			continue
		}
		if (i-SlackMaxFields)%SlackMaxFields == 0 {
			more = append(more, SlackBlock{Type: "section"})
		}
		more[len(more)-1].Fields = append(more[len(more)-1].Fields, t)
	}
	return append([]SlackBlock{first}, more...)
}

// slackSelect is a static select answering field i in a message; each
// option's value is a signed ActionChoose id.
func slackSelect(f *Form, i int, s *signer) SlackElement {
	sel := SlackElement{Type: "static_select", ActionID: s.sign(ActionID{Kind: ActionSelect, Token: f.Token, Field: i}),
		Placeholder: plainText("Choose…", SlackMaxButtonText)}
	for j, o := range f.Fields[i].choices() {
		sel.Options = append(sel.Options, SlackOption{Text: *plainText(o, SlackMaxButtonText),
			Value: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Field: i, Option: j})})
	}
	return sel
}

func slackForm(f *Form, s *signer) []SlackBlock {
	var blocks []SlackBlock
	q := ""
	if f.Question != "" {
		q = ConvertMarkdown(f.Question, DialectSlack)
	}
	single := len(f.Fields) == 1 && (f.Fields[0].Kind == KindChoice || f.Fields[0].Kind == KindConfirm)
	if single {
		fld := f.Fields[0]
		label := "*" + slackEsc(fld.Label) + "*"
		for _, part := range Chunk(joinNonEmpty("\n\n", q, label), SlackMaxSectionText, DialectSlack) {
			blocks = append(blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: part}})
		}
		var els []any
		if opts := fld.choices(); len(opts) > 5 {
			els = append(els, slackSelect(f, 0, s))
		} else {
			for j, o := range opts {
				els = append(els, SlackElement{Type: "button", Text: plainText(o, SlackMaxButtonText),
					ActionID: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Option: j}), Value: strconv.Itoa(j)})
			}
		}
		blocks = append(blocks, SlackBlock{Type: "actions", Elements: els})
	} else {
		var b strings.Builder
		for i, fld := range f.Fields {
			fmt.Fprintf(&b, "*%d. %s*", i+1, slackEsc(fld.Label))
			if opts := fld.choices(); fld.Kind != KindText && len(opts) > 0 {
				b.WriteString(" — " + slackEsc(strings.Join(opts, " / ")))
			}
			if !fld.Required {
				b.WriteString(" _(optional)_")
			}
			b.WriteByte('\n')
		}
		for _, part := range Chunk(joinNonEmpty("\n\n", q, b.String()), SlackMaxSectionText, DialectSlack) {
			blocks = append(blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: part}})
		}
		blocks = append(blocks, SlackBlock{Type: "actions", Elements: []any{
			SlackElement{Type: "button", Text: plainText("Answer…", SlackMaxButtonText), Style: "primary",
				ActionID: s.sign(ActionID{Kind: ActionOpenForm, Token: f.Token}), Value: "open"},
		}})
	}
	if f.AllowFreeText {
		blocks = append(blocks, SlackBlock{Type: "context", Elements: []any{
			SlackText{Type: "mrkdwn", Text: "Or reply in this thread with your answer in your own words."},
		}})
	}
	return blocks
}

// SlackModal renders a card's form as a modal view with one input block per
// field (radio buttons or checkboxes up to 10 options, selects past that, a
// multiline text input for text fields) and, if the form allows free text, an
// optional free-text input. The card must have a form.
func SlackModal(c Card, k Key) (SlackView, error) {
	if err := c.Validate(); err != nil {
		return SlackView{}, err
	}
	if c.Form == nil {
		return SlackView{}, fmt.Errorf("%w: SlackModal needs a form", ErrInvalidCard)
	}
	f := c.Form
	s := &signer{key: k}
	v := SlackView{
		Type:       "modal",
		CallbackID: s.sign(ActionID{Kind: ActionSubmit, Token: f.Token}),
		Title:      *plainText(c.Title, SlackMaxModalTitle),
		Submit:     plainText("Submit", SlackMaxModalTitle),
		Close:      plainText("Cancel", SlackMaxModalTitle),
	}
	if f.Question != "" {
		for _, part := range Chunk(ConvertMarkdown(f.Question, DialectSlack), SlackMaxSectionText, DialectSlack) {
			v.Blocks = append(v.Blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: part}})
		}
	}
	for i, fld := range f.Fields {
		el := &SlackElement{}
		opts := fld.choices()
		var options []SlackOption
		for j, o := range opts {
			options = append(options, SlackOption{Text: *plainText(o, SlackMaxButtonText),
				Value: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Field: i, Option: j})})
		}
		selectID := s.sign(ActionID{Kind: ActionSelect, Token: f.Token, Field: i})
		switch {
		case fld.Kind == KindText:
			*el = SlackElement{Type: "plain_text_input", Multiline: true, MaxLength: 3000,
				ActionID: s.sign(ActionID{Kind: ActionText, Token: f.Token, Field: i})}
		case fld.Kind == KindMultiChoice && len(opts) <= SlackMaxRadioOpts:
			*el = SlackElement{Type: "checkboxes", ActionID: selectID, Options: options}
		case fld.Kind == KindMultiChoice:
			*el = SlackElement{Type: "multi_static_select", ActionID: selectID, Options: options,
				Placeholder: plainText("Choose…", SlackMaxButtonText)}
		case len(opts) <= SlackMaxRadioOpts:
			*el = SlackElement{Type: "radio_buttons", ActionID: selectID, Options: options}
		default:
			*el = SlackElement{Type: "static_select", ActionID: selectID, Options: options,
				Placeholder: plainText("Choose…", SlackMaxButtonText)}
		}
		v.Blocks = append(v.Blocks, SlackBlock{Type: "input", BlockID: "f" + strconv.Itoa(i),
			Label: plainText(fld.Label, SlackMaxInputLabel), Element: el, Optional: !fld.Required})
	}
	if f.AllowFreeText {
		v.Blocks = append(v.Blocks, SlackBlock{Type: "input", BlockID: "free", Optional: true,
			Label: plainText("Anything else? Answer in your own words", SlackMaxInputLabel),
			Element: &SlackElement{Type: "plain_text_input", Multiline: true, MaxLength: 3000,
				ActionID: s.sign(ActionID{Kind: ActionFreeText, Token: f.Token})}})
	}
	if s.err != nil {
		return SlackView{}, s.err
	}
	return v, nil
}
