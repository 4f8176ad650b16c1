package render

import (
	"fmt"
	"strconv"
	"strings"
)

// Discord limits this renderer keeps to.
const (
	DiscordMaxContent       = 2000 // message content
	DiscordMaxEmbeds        = 10   // embeds per message
	DiscordMaxEmbedTotal    = 6000 // characters across all embeds of a message
	DiscordMaxTitle         = 256  // embed title
	DiscordMaxDescription   = 4096 // embed description
	DiscordMaxFields        = 25   // fields per embed
	DiscordMaxFieldName     = 256  // field name
	DiscordMaxFieldValue    = 1024 // field value
	DiscordMaxFooter        = 2048 // embed footer text
	DiscordMaxRows          = 5    // action rows of a message (legacy messages: 5; V2 cards keep to it)
	DiscordMaxButtons       = 5    // buttons per action row
	DiscordMaxButtonLabel   = 80   // button label
	DiscordMaxSelectOptions = 25   // options of a string select
	DiscordMaxOptionLabel   = 100  // select option label
	DiscordMaxPlaceholder   = 100  // select and text input placeholder (select allows 150)
	DiscordMaxCustomID      = 100  // custom_id
	DiscordMaxModalTitle    = 45   // modal title
	DiscordMaxInputLabel    = 45   // a modal label's label (Component Reference, Label: "max 45 characters")
	DiscordMaxInputValue    = 4000 // text input value
	// embedBudget leaves room in an embed for the footer added last.
	embedBudget = DiscordMaxEmbedTotal - 500
)

// Discord component types and styles (the API's numbers, Component Reference: "Component
// Types"). Section, text display, separator and container need the message flag
// DiscordFlagComponentsV2; a label wraps one input of a modal.
const (
	DiscordActionRow    = 1
	DiscordButton       = 2
	DiscordStringSelect = 3
	DiscordTextInput    = 4
	DiscordSection      = 9
	DiscordTextDisplay  = 10
	DiscordSeparator    = 14
	DiscordContainer    = 17
	DiscordLabel        = 18

	DiscordStylePrimary   = 1
	DiscordStyleSecondary = 2
	DiscordStyleSuccess   = 3
	DiscordStyleDanger    = 4

	DiscordInputShort     = 1
	DiscordInputParagraph = 2
)

// DiscordEmbedField is one embed field.
type DiscordEmbedField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

// DiscordEmbedFooter is an embed's footer.
type DiscordEmbedFooter struct {
	Text string `json:"text"`
}

// DiscordEmbed is a rich embed.
type DiscordEmbed struct {
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Color       int                 `json:"color,omitempty"`
	Fields      []DiscordEmbedField `json:"fields,omitempty"`
	Footer      *DiscordEmbedFooter `json:"footer,omitempty"`
}

// DiscordSelectOption is an option of a string select. Default shows it chosen already.
type DiscordSelectOption struct {
	Label   string `json:"label"`
	Value   string `json:"value"`
	Default bool   `json:"default,omitempty"`
}

// DiscordComponent is a message or modal component: an action row (type 1)
// holding buttons (2) or one string select (3); in a Components V2 message
// also a container (17) of text displays (10, Content) and separators (14);
// in a modal a label (18: Label, Description) wrapping one text input (4) or
// string select (3) as its Component. Only the fields of its type are set.
// Required is a pointer because Discord defaults it to true when absent.
type DiscordComponent struct {
	Type        int                   `json:"type"`
	Components  []DiscordComponent    `json:"components,omitempty"`
	Style       int                   `json:"style,omitempty"`
	Label       string                `json:"label,omitempty"`
	CustomID    string                `json:"custom_id,omitempty"`
	Options     []DiscordSelectOption `json:"options,omitempty"`
	Placeholder string                `json:"placeholder,omitempty"`
	MinValues   *int                  `json:"min_values,omitempty"`
	MaxValues   *int                  `json:"max_values,omitempty"`
	Required    *bool                 `json:"required,omitempty"`
	MaxLength   int                   `json:"max_length,omitempty"`
	Content     string                `json:"content,omitempty"`
	AccentColor *int                  `json:"accent_color,omitempty"`
	Divider     *bool                 `json:"divider,omitempty"`
	Spacing     int                   `json:"spacing,omitempty"`
	Description string                `json:"description,omitempty"`
	Component   *DiscordComponent     `json:"component,omitempty"`
}

// DiscordAllowedMentions controls pings; the renderer always sends an empty
// parse list, so nothing the model writes can ping anyone.
type DiscordAllowedMentions struct {
	Parse []string `json:"parse"`
}

// DiscordMessage is the body of a create/edit message request. Flags is
// DiscordFlagComponentsV2 on a Components V2 message, which then has neither
// content nor embeds (see DiscordV2); 0 on a message of content or embeds.
type DiscordMessage struct {
	Content         string                 `json:"content,omitempty"`
	Embeds          []DiscordEmbed         `json:"embeds,omitempty"`
	Components      []DiscordComponent     `json:"components,omitempty"`
	AllowedMentions DiscordAllowedMentions `json:"allowed_mentions"`
	Flags           int                    `json:"flags,omitempty"`
}

// V2 reports whether the message is a Components V2 message.
func (m DiscordMessage) V2() bool { return m.Flags&DiscordFlagComponentsV2 != 0 }

// DiscordModal is the data of a modal interaction response (type 9): one to
// five labels, each wrapping a text input or a string select. CustomID is the
// signed ActionSubmit id of the form; each input's custom_id is a signed
// ActionText, ActionSelect or ActionFreeText id.
type DiscordModal struct {
	Title      string             `json:"title"`
	CustomID   string             `json:"custom_id"`
	Components []DiscordComponent `json:"components"`
}

func discordEsc(s string) string { return EscapeDiscord(NeutralizeMentions(s)) }

func discordStyle(s ButtonStyle) int {
	switch s {
	case StylePrimary:
		return DiscordStylePrimary
	case StyleDanger:
		return DiscordStyleDanger
	}
	return DiscordStyleSecondary
}

func embedSize(e DiscordEmbed) int {
	n := Width(e.Title) + Width(e.Description)
	for _, f := range e.Fields {
		n += Width(f.Name) + Width(f.Value)
	}
	if e.Footer != nil {
		n += Width(e.Footer.Text)
	}
	return n
}

// embedBuilder lays content out in embeds that each stay within Discord's
// per-embed limits and a per-message budget.
type embedBuilder struct {
	color  int
	embeds []DiscordEmbed
}

func (b *embedBuilder) fresh() *DiscordEmbed {
	b.embeds = append(b.embeds, DiscordEmbed{Color: b.color})
	return &b.embeds[len(b.embeds)-1]
}

func (b *embedBuilder) last() *DiscordEmbed {
	if len(b.embeds) == 0 {
		return b.fresh()
	}
	return &b.embeds[len(b.embeds)-1]
}

// text adds markdown-dialect text as descriptions, starting a new embed for
// each description-sized piece (splitBlocks: code blocks kept whole where they fit).
func (b *embedBuilder) text(s string) {
	for _, part := range splitBlocks(s, DiscordMaxDescription) {
		e := b.last()
		if e.Description != "" || len(e.Fields) > 0 || embedSize(*e)+Width(part) > embedBudget {
			e = b.fresh()
		}
		e.Description = part
	}
}

// continued is what a field's name reads as on the fields that carry the rest of its value.
const continued = " (continued)"

// fields adds a field named name showing value, text already in Discord's dialect. A value
// longer than a field takes is split (splitBlocks: code blocks kept whole where they fit) across
// fields named "name (continued)", in further embeds as each fills; split fields are not
// inline, so the pieces read one under another. Nothing of value is dropped.
func (b *embedBuilder) fields(name, value string, inline bool) {
	parts := splitBlocks(value, DiscordMaxFieldValue)
	if len(parts) == 0 {
		parts = []string{"—"}
	}
	for i, p := range parts {
		f := DiscordEmbedField{Name: truncate(name, DiscordMaxFieldName), Value: p, Inline: inline && len(parts) == 1}
		if i > 0 {
			f.Name = truncate(name, DiscordMaxFieldName-Width(continued)) + continued
		}
		b.field(f)
	}
}

func (b *embedBuilder) field(f DiscordEmbedField) {
	e := b.last()
	if len(e.Fields) == DiscordMaxFields || embedSize(*e)+Width(f.Name)+Width(f.Value) > embedBudget {
		e = b.fresh()
	}
	e.Fields = append(e.Fields, f)
}

// Discord renders a card as messages of embeds coloured by status and
// components. Usually there is one; when the embeds exceed one message
// (10 embeds, 6,000 characters) the card continues in further messages, to be
// sent in order; components ride on the last. Nothing of the body, a field's
// value or a subagent's result is cut off: text past a description (4,096) or a
// field value (1,024) continues in the next description or in fields named
// "… (continued)", in further embeds (25 fields, 6,000 characters) and
// messages as each fills, with code blocks kept whole where they fit (a longer
// one is closed and reopened at each cut). Every message sets
// allowed_mentions to ping nobody. A form with one choice or confirm field is
// answered by buttons (a select past 5 options), a multi_choice field by a
// multi-select, text fields and free text through an "Answer…" button
// (ActionOpenForm, or ActionFreeText) whose click should open DiscordModal.
// Interactive ids are signed with k.
func Discord(c Card, k Key) ([]DiscordMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &signer{key: k}
	b := &embedBuilder{color: StatusColor(c.Status)}
	b.fresh().Title = truncate(headline(c), DiscordMaxTitle)
	// An embed shows its fields under its description, so the subagents' fields go in the
	// title's embed and the body starts the next one: the results come before the answer.
	for _, sa := range c.Subagents {
		b.fields(discordSubagentName(sa), discordSubagentValue(sa), false)
	}
	if c.Body != "" {
		b.text(ConvertMarkdown(c.Body, DialectDiscord))
	}
	for _, f := range c.Fields {
		b.fields(NeutralizeMentions(orDash(f.Label)), discordEsc(orDash(f.Value)), f.Inline)
	}
	if c.Form != nil {
		b.text(discordFormText(c.Form))
	}
	rows, err := discordRows(c, s)
	if err != nil {
		return nil, err
	}
	status, run, elapsed := footerParts(c)
	b.last().Footer = &DiscordEmbedFooter{Text: truncate(joinNonEmpty(" · ", status, run, elapsed), DiscordMaxFooter)}

	var msgs []DiscordMessage
	size := 0
	for _, e := range b.embeds {
		n := embedSize(e)
		if len(msgs) == 0 || len(msgs[len(msgs)-1].Embeds) == DiscordMaxEmbeds || size+n > DiscordMaxEmbedTotal {
			msgs = append(msgs, DiscordMessage{AllowedMentions: DiscordAllowedMentions{Parse: []string{}}})
			size = 0
		}
		msgs[len(msgs)-1].Embeds = append(msgs[len(msgs)-1].Embeds, e)
		size += n
	}
	msgs[len(msgs)-1].Components = rows
	return msgs, nil
}

// discordRows are the action rows of a card: its form's, then its actions' buttons five to a
// row. More than DiscordMaxRows rows is ErrInvalidCard, as is a failure to sign an id.
func discordRows(c Card, s *signer) ([]DiscordComponent, error) {
	var rows []DiscordComponent
	if c.Form != nil {
		rows = discordFormRows(c.Form, s)
	}
	var buttons []DiscordComponent
	for _, a := range c.Actions {
		buttons = append(buttons, DiscordComponent{Type: DiscordButton, Style: discordStyle(a.Style),
			Label: truncate(a.Label, DiscordMaxButtonLabel), CustomID: s.sign(a.ID)})
	}
	for start := 0; start < len(buttons); start += DiscordMaxButtons {
		rows = append(rows, DiscordComponent{Type: DiscordActionRow,
			Components: buttons[start:min(len(buttons), start+DiscordMaxButtons)]})
	}
	if len(rows) > DiscordMaxRows {
		return nil, fmt.Errorf("%w: %d action rows for Discord, max %d", ErrInvalidCard, len(rows), DiscordMaxRows)
	}
	if s.err != nil {
		return nil, s.err
	}
	return rows, nil
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// discordSubagentName is a subagent's field name: its icon, name and state.
func discordSubagentName(sa SubagentResult) string {
	return subagentIcon(sa) + " " + NeutralizeMentions(sa.Name) + " · " + subagentState(sa)
}

// discordSubagentValue is a subagent's result in Discord's dialect, whole: its summary, then a
// line for each structured field.
func discordSubagentValue(sa SubagentResult) string {
	var v strings.Builder
	if sa.Summary != "" {
		v.WriteString(ConvertMarkdown(sa.Summary, DialectDiscord))
	}
	for _, f := range sa.Structured {
		if v.Len() > 0 {
			v.WriteByte('\n')
		}
		v.WriteString("**" + discordEsc(f.Label) + ":** " + discordEsc(f.Value))
	}
	return orDash(v.String())
}

// discordFormText is the question and, for each field, its label and options.
func discordFormText(f *Form) string {
	var b strings.Builder
	if f.Question != "" {
		b.WriteString(ConvertMarkdown(f.Question, DialectDiscord))
	}
	for i, fld := range f.Fields {
		b.WriteString("\n\n")
		if len(f.Fields) > 1 {
			b.WriteString(strconv.Itoa(i+1) + ". ")
		}
		b.WriteString("**" + discordEsc(fld.Label) + "**")
		if !fld.Required {
			b.WriteString(" *(optional)*")
		}
		if fld.Kind == KindMultiChoice {
			b.WriteString(" — choose any")
		}
	}
	if f.AllowFreeText {
		b.WriteString("\n\n*You can also answer in your own words.*")
	}
	return strings.TrimLeft(b.String(), "\n")
}

func intp(n int) *int    { return &n }
func boolp(v bool) *bool { return &v }

// discordSelect is a string select answering field i; each option's value is
// a signed ActionChoose id.
func discordSelect(f *Form, i int, s *signer) DiscordComponent {
	fld := f.Fields[i]
	sel := DiscordComponent{Type: DiscordStringSelect,
		CustomID:    s.sign(ActionID{Kind: ActionSelect, Token: f.Token, Field: i}),
		Placeholder: truncate(fld.Label, DiscordMaxPlaceholder)}
	for j, o := range fld.choices() {
		sel.Options = append(sel.Options, DiscordSelectOption{Label: truncate(o, DiscordMaxOptionLabel),
			Value: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Field: i, Option: j})})
	}
	if fld.Kind == KindMultiChoice {
		sel.MinValues = intp(0)
		if fld.Required {
			sel.MinValues = intp(1)
		}
		sel.MaxValues = intp(len(sel.Options))
	}
	return sel
}

func row(cs ...DiscordComponent) DiscordComponent {
	return DiscordComponent{Type: DiscordActionRow, Components: cs}
}

func discordFormRows(f *Form, s *signer) []DiscordComponent {
	var rows []DiscordComponent
	freeText := func() DiscordComponent {
		return DiscordComponent{Type: DiscordButton, Style: DiscordStyleSecondary, Label: "Answer in my own words…",
			CustomID: s.sign(ActionID{Kind: ActionFreeText, Token: f.Token})}
	}
	if len(f.Fields) == 1 && f.Fields[0].Kind != KindText {
		fld := f.Fields[0]
		opts := fld.choices()
		if fld.Kind == KindMultiChoice || len(opts) > DiscordMaxButtons {
			rows = append(rows, row(discordSelect(f, 0, s)))
		} else {
			var bs []DiscordComponent
			for j, o := range opts {
				bs = append(bs, DiscordComponent{Type: DiscordButton, Style: DiscordStylePrimary,
					Label: truncate(o, DiscordMaxButtonLabel), CustomID: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Option: j})})
			}
			rows = append(rows, row(bs...))
		}
		if f.AllowFreeText {
			rows = append(rows, row(freeText()))
		}
		return rows
	}
	// Several fields (or a text field): selects for the fields with options
	// when they fit beside the button row, and a modal for everything else.
	var selects []DiscordComponent
	hasText := false
	for i, fld := range f.Fields {
		if fld.Kind == KindText {
			hasText = true
			continue
		}
		selects = append(selects, row(discordSelect(f, i, s)))
	}
	open := DiscordComponent{Type: DiscordButton, Style: DiscordStylePrimary, Label: "Answer…",
		CustomID: s.sign(ActionID{Kind: ActionOpenForm, Token: f.Token})}
	if hasText || len(selects) > DiscordMaxRows-2 {
		// The modal asks every field; selects would only split the answer.
		return []DiscordComponent{row(open)}
	}
	rows = append(rows, selects...)
	buttons := []DiscordComponent{{Type: DiscordButton, Style: DiscordStyleSuccess, Label: "Submit",
		CustomID: s.sign(ActionID{Kind: ActionSubmit, Token: f.Token})}}
	if f.AllowFreeText {
		buttons = append(buttons, freeText())
	}
	return append(rows, row(buttons...))
}

// DiscordFormModal renders a card's form as a modal of labels (Component Reference: "Label";
// Using Modal Components), one per field: a label wraps a string select of the field's options
// for choice, multi_choice and confirm fields (its option values are signed ActionChoose ids,
// already chosen options ticked) and a paragraph text input for text fields. When the form
// allows free text and a modal's five components leave room, a last label asks for the answer in
// the user's own words. With free set, it renders only that free-text label (the "Answer in my
// own words…" button). A field label longer than a label's 45 characters is cut there and shown
// whole (up to 100) as the label's description. The card must have a form.
func DiscordFormModal(c Card, k Key, free bool) (DiscordModal, error) {
	if err := c.Validate(); err != nil {
		return DiscordModal{}, err
	}
	if c.Form == nil {
		return DiscordModal{}, fmt.Errorf("%w: DiscordFormModal needs a form", ErrInvalidCard)
	}
	f := c.Form
	s := &signer{key: k}
	m := DiscordModal{Title: truncate(c.Title, DiscordMaxModalTitle),
		CustomID: s.sign(ActionID{Kind: ActionSubmit, Token: f.Token})}
	freeInput := DiscordComponent{Type: DiscordTextInput, Style: DiscordInputParagraph,
		CustomID: s.sign(ActionID{Kind: ActionFreeText, Token: f.Token}), Required: boolp(free), MaxLength: DiscordMaxInputValue}
	freeLabel := DiscordLabelOf(DiscordFreeTextLabel, freeInput)
	if free {
		m.Components = []DiscordComponent{freeLabel}
	} else {
		for i, fld := range f.Fields {
			var in DiscordComponent
			if fld.Kind == KindText {
				in = DiscordComponent{Type: DiscordTextInput, Style: DiscordInputParagraph,
					CustomID: s.sign(ActionID{Kind: ActionText, Token: f.Token, Field: i}),
					Required: boolp(fld.Required), MaxLength: DiscordMaxInputValue}
			} else {
				in = discordModalSelect(f, i, s)
			}
			m.Components = append(m.Components, DiscordLabelOf(fld.Label, in))
		}
		if f.AllowFreeText && len(m.Components) < DiscordMaxModalComponents {
			m.Components = append(m.Components, freeLabel)
		}
	}
	if s.err != nil {
		return DiscordModal{}, s.err
	}
	return m, nil
}

// DiscordFreeTextLabel is the label of the input a free-text answer is typed in.
const DiscordFreeTextLabel = "Your answer, in your own words"

// DiscordLabelOf wraps a modal input in a label reading label: cut to the label's 45
// characters, and then shown whole (to 100) as its description.
func DiscordLabelOf(label string, in DiscordComponent) DiscordComponent {
	l := DiscordComponent{Type: DiscordLabel, Label: truncate(orDash(label), DiscordMaxInputLabel), Component: &in}
	if Width(label) > DiscordMaxInputLabel {
		l.Description = truncate(label, DiscordMaxLabelDescription)
	}
	return l
}

// discordModalSelect is the string select answering field i in a modal: its options (Yes and
// No for a confirm field) with signed ActionChoose values, those already selected ticked; any
// number of them for a multi_choice field, else one; none needed when the field is optional.
// In a modal a select is required unless it says otherwise, and then needs at least one value
// (Component Reference: String Select, min_values and required).
func discordModalSelect(f *Form, i int, s *signer) DiscordComponent {
	fld := f.Fields[i]
	sel := DiscordComponent{Type: DiscordStringSelect, CustomID: s.sign(ActionID{Kind: ActionSelect, Token: f.Token, Field: i}),
		Placeholder: "Choose one", Required: boolp(fld.Required)}
	for j, o := range fld.choices() {
		sel.Options = append(sel.Options, DiscordSelectOption{Label: truncate(o, DiscordMaxOptionLabel),
			Value: s.sign(ActionID{Kind: ActionChoose, Token: f.Token, Field: i, Option: j}), Default: fld.isSelected(j)})
	}
	if !fld.Required {
		sel.MinValues = intp(0)
	}
	if fld.Kind == KindMultiChoice {
		sel.Placeholder = "Choose any"
		sel.MaxValues = intp(len(sel.Options))
	}
	return sel
}
