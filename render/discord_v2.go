package render

import "strings"

// Discord's Components V2 and modal limits this renderer keeps to. Sources, as of 2026-08:
// Discord's "Component Reference" (discord.com/developers/docs/components/reference), "Using
// Message Components" and the message resource ("Create Message", "Edit Message"), and
// "Receiving and Responding" for modals.
const (
	// DiscordFlagComponentsV2 is the message flag IS_COMPONENTS_V2 (1 << 15). Component
	// Reference: "Once a message has been sent with this flag, it can't be removed from that
	// message"; Create Message: with it "the message can only contain components. Providing
	// content, embeds, sticker_ids, poll, or shared_client_theme will fail with a 400 BAD
	// REQUEST"; Edit Message: the flag "can only be set", and setting it needs content null and
	// embeds [].
	DiscordFlagComponentsV2 = 1 << 15
	// DiscordMaxV2Components: Component Reference, "Messages allow up to 40 total components";
	// nested components count (a container, each text display and separator in it, each action
	// row and each button or select in a row).
	DiscordMaxV2Components = 40
	// DiscordMaxV2Text is the most text across all the text displays of one message. Discord's
	// Component Reference states no figure (a text display's content has no length of its own);
	// the limit is the API's, documented by the libraries that track it: the discord.js guide
	// "Display Components" ("The amount of text across all text display components cannot
	// exceed 4000 characters") and JDA's TextDisplay ("limited to the 4000 total characters, as
	// imposed by components V2").
	DiscordMaxV2Text = 4000
	// DiscordMaxModalComponents: Receiving and Responding, modal: "Between 1 and 5 (inclusive)
	// components that make up the modal".
	DiscordMaxModalComponents = 5
	// DiscordMaxLabelDescription: Component Reference, Label: "An optional description text
	// for the label; max 100 characters" (its label: max 45, DiscordMaxInputLabel).
	DiscordMaxLabelDescription = 100
	// DiscordSpacingSmall is a separator's small padding (Component Reference, Separator).
	DiscordSpacingSmall = 1

	// v2PieceBudget is the longest text one text display is given, leaving a message's title and
	// footer room beside it within DiscordMaxV2Text.
	v2PieceBudget = DiscordMaxV2Text - 400
)

// v2Part is one text display of a V2 card; sep puts a separator before it when it does not
// start a message.
type v2Part struct {
	text string
	sep  bool
}

// v2Builder packs a card's text displays into Components V2 messages, each a container of
// them within DiscordMaxV2Text and DiscordMaxV2Components.
type v2Builder struct {
	color int
	msgs  []v2Message
}

type v2Message struct {
	children []DiscordComponent // of the container
	text     int                // Width of the text displays
}

// count is the message's components: the container and its children.
func (m v2Message) count() int { return 1 + len(m.children) }

func (b *v2Builder) add(p v2Part) {
	need := Width(p.text)
	if len(b.msgs) == 0 {
		b.msgs = append(b.msgs, v2Message{})
	}
	m := &b.msgs[len(b.msgs)-1]
	comps := 1
	if p.sep && len(m.children) > 0 {
		comps++
	}
	if len(m.children) > 0 && (m.text+need > DiscordMaxV2Text || m.count()+comps > DiscordMaxV2Components) {
		b.msgs = append(b.msgs, v2Message{})
		m = &b.msgs[len(b.msgs)-1]
	}
	if p.sep && len(m.children) > 0 {
		m.children = append(m.children, DiscordComponent{Type: DiscordSeparator, Divider: boolp(true), Spacing: DiscordSpacingSmall})
	}
	m.children = append(m.children, DiscordComponent{Type: DiscordTextDisplay, Content: p.text})
	m.text += need
}

// section adds a titled section — a subagent's result, a field — as one text display, or, when
// it is longer than one takes, as several, the further ones titled "title (continued)".
// value is already in Discord's dialect; code blocks are kept whole where they fit.
func (b *v2Builder) section(title, value string, sep bool) {
	budget := v2PieceBudget - Width(title) - Width(continued) - 1
	for i, part := range splitBlocks(value, budget) {
		t := title
		if i > 0 {
			t = strings.TrimSuffix(title, "**") + continued + "**"
		}
		b.add(v2Part{text: t + "\n" + part, sep: sep && i == 0})
	}
}

// DiscordV2 renders a card as Components V2 messages (flag DiscordFlagComponentsV2; no content,
// no embeds). Each is a container with the status's accent colour holding text displays: the
// title, each subagent's result, the body, the fields, the form's question and fields, and a
// footer in small text, sections set apart by separators; the action rows — the same buttons
// and selects as Discord's, at most DiscordMaxRows — follow the container at the top level of
// the last message. Usually there is one message; when the text passes DiscordMaxV2Text or the
// components DiscordMaxV2Components the card continues in further messages, to be sent in order,
// nothing cut off: text longer than a text display is given continues in the next (code blocks
// kept whole where they fit, a longer one closed and reopened at each cut). Every message
// sets allowed_mentions to ping nobody, and all text is escaped and mention-neutralized as in
// Discord. Interactive ids are signed with k.
func DiscordV2(c Card, k Key) ([]DiscordMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &signer{key: k}
	rows, err := discordRows(c, s)
	if err != nil {
		return nil, err
	}
	b := &v2Builder{color: StatusColor(c.Status)}
	b.add(v2Part{text: "### " + EscapeDiscord(truncate(headline(c), DiscordMaxTitle))})
	for i, sa := range c.Subagents {
		b.section("**"+subagentIcon(sa)+" "+discordEsc(sa.Name)+" · "+subagentState(sa)+"**", discordSubagentValue(sa), i == 0)
	}
	if c.Body != "" {
		for i, part := range splitBlocks(ConvertMarkdown(c.Body, DialectDiscord), v2PieceBudget) {
			b.add(v2Part{text: part, sep: i == 0 && len(c.Subagents) > 0})
		}
	}
	for i, f := range c.Fields {
		b.section("**"+discordEsc(orDash(f.Label))+"**", discordEsc(orDash(f.Value)), i == 0)
	}
	if c.Form != nil {
		for i, part := range splitBlocks(discordFormText(c.Form), v2PieceBudget) {
			b.add(v2Part{text: part, sep: i == 0})
		}
	}
	status, run, elapsed := footerParts(c)
	b.add(v2Part{text: "-# " + EscapeDiscord(joinNonEmpty(" · ", status, run, elapsed)), sep: true})

	msgs := make([]DiscordMessage, 0, len(b.msgs)+1)
	for _, m := range b.msgs {
		msgs = append(msgs, DiscordMessage{Flags: DiscordFlagComponentsV2, AllowedMentions: DiscordAllowedMentions{Parse: []string{}},
			Components: []DiscordComponent{{Type: DiscordContainer, AccentColor: intp(b.color), Components: m.children}}})
	}
	if len(rows) > 0 {
		n := 0
		for _, r := range rows {
			n += 1 + len(r.Components)
		}
		if b.msgs[len(b.msgs)-1].count()+n > DiscordMaxV2Components {
			// The rows alone make a message: a V2 message may hold action rows only.
			msgs = append(msgs, DiscordMessage{Flags: DiscordFlagComponentsV2, AllowedMentions: DiscordAllowedMentions{Parse: []string{}}})
		}
		last := &msgs[len(msgs)-1]
		last.Components = append(last.Components, rows...)
	}
	return msgs, nil
}

// DiscordV2Text renders markdown as Components V2 messages of one text display each, within
// DiscordMaxV2Text (code blocks kept whole where they fit): text as it must be shown in a
// message that is a V2 one already, which can never carry content again
// (DiscordFlagComponentsV2). Every message pings nobody. Blank text gives no messages.
func DiscordV2Text(markdown string) []DiscordMessage {
	var out []DiscordMessage
	for _, part := range splitBlocks(ConvertMarkdown(markdown, DialectDiscord), DiscordMaxV2Text) {
		out = append(out, DiscordMessage{Flags: DiscordFlagComponentsV2, AllowedMentions: DiscordAllowedMentions{Parse: []string{}},
			Components: []DiscordComponent{{Type: DiscordTextDisplay, Content: part}}})
	}
	return out
}
