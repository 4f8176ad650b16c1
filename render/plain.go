package render

import (
	"strconv"
	"strings"
)

// PlainMaxText is the size of Plain's pieces: the smallest message limit of
// the supported platforms (Discord's 2,000), so they fit anywhere.
const PlainMaxText = 2000

// Plain renders a card as plain text pieces of at most PlainMaxText
// characters, for any platform and as the fallback whenever a richer card is
// refused. Mentions are neutralized; markdown is reduced to readable text
// (code keeps ``` fences). A form is asked one field at a time (Form.Step)
// with numbered options: "Reply 1–3 or type your answer." Action buttons are
// left out: they need a click. Send the pieces without a parse mode (on Slack,
// pass them through EscapeSlack first).
func Plain(c Card) []string {
	var b strings.Builder
	b.WriteString(headline(c))
	for _, sa := range c.Subagents {
		b.WriteString("\n\n" + subagentIcon(sa) + " " + NeutralizeMentions(sa.Name) + " (" + subagentState(sa) + ")")
		if sa.Summary != "" {
			b.WriteString("\n" + ConvertMarkdown(sa.Summary, DialectPlain))
		}
		for _, f := range sa.Structured {
			b.WriteString("\n    " + NeutralizeMentions(f.Label) + ": " + NeutralizeMentions(f.Value))
		}
	}
	if c.Body != "" {
		b.WriteString("\n\n" + ConvertMarkdown(c.Body, DialectPlain))
	}
	if len(c.Fields) > 0 {
		b.WriteString("\n")
		for _, f := range c.Fields {
			b.WriteString("\n" + NeutralizeMentions(f.Label) + ": " + NeutralizeMentions(f.Value))
		}
	}
	if f := c.Form; f != nil && f.Step >= 0 && f.Step < len(f.Fields) {
		b.WriteString("\n\n" + plainFormText(f))
	}
	status, run, elapsed := footerParts(c)
	if run != "" {
		run = "run " + run
	}
	b.WriteString("\n\n— " + joinNonEmpty(" · ", status, run, elapsed))
	return Chunk(b.String(), PlainMaxText, DialectPlain)
}

func plainFormText(f *Form) string {
	var b strings.Builder
	if f.Question != "" {
		b.WriteString(ConvertMarkdown(f.Question, DialectPlain) + "\n\n")
	}
	fld := f.Fields[f.Step]
	if len(f.Fields) > 1 {
		b.WriteString("(" + strconv.Itoa(f.Step+1) + "/" + strconv.Itoa(len(f.Fields)) + ") ")
	}
	b.WriteString(NeutralizeMentions(fld.Label))
	if !fld.Required {
		b.WriteString(" (optional)")
	}
	opts := fld.choices()
	if fld.Kind != KindText {
		for j, o := range opts {
			b.WriteString("\n" + strconv.Itoa(j+1) + ". " + NeutralizeMentions(o))
		}
	}
	b.WriteString("\n")
	switch fld.Kind {
	case KindText:
		b.WriteString("Type your answer.")
	case KindMultiChoice:
		b.WriteString("Reply with the numbers that apply (e.g. 1,3)")
		if f.AllowFreeText {
			b.WriteString(" or type your answer")
		}
		b.WriteString(".")
	default:
		b.WriteString("Reply " + optionRange(len(opts)))
		if f.AllowFreeText {
			b.WriteString(" or type your answer")
		}
		b.WriteString(".")
	}
	if !fld.Required {
		b.WriteString(` Reply "skip" to leave it out.`)
	}
	return b.String()
}
