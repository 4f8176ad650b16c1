package render

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// These validators state the platforms' limits independently of the
// renderers, so a renderer bug shows up as a violation, not a tautology.

type violations []string

func (v *violations) check(ok bool, format string, args ...any) {
	if !ok {
		*v = append(*v, fmt.Sprintf(format, args...))
	}
}

func (v *violations) text(where, s string, limit int) {
	v.check(utf8.ValidString(s), "%s: invalid UTF-8", where)
	v.check(Width(s) <= limit, "%s: %d characters, limit %d", where, Width(s), limit)
}

// shown is like text for Telegram HTML, whose limit counts the characters shown.
func (v *violations) shown(where, s string, limit int) {
	v.check(utf8.ValidString(s), "%s: invalid UTF-8", where)
	n := VisibleWidth(s, DialectTelegram)
	v.check(n <= limit, "%s: %d characters shown, limit %d", where, n, limit)
}

var (
	unneutralizedMass = regexp.MustCompile(`(?i)(^|[^\w/\x{200b}])@(everyone|here|channel)`)
	pingSyntax        = regexp.MustCompile(`<[@!][^\x{200b}]`)
)

// mentions flags text that could still ping.
func (v *violations) mentions(where, s string) {
	v.check(!unneutralizedMass.MatchString(s), "%s: unneutralized mass mention in %q", where, s)
	v.check(!pingSyntax.MatchString(s), "%s: ping syntax in %q", where, s)
}

func validateSlack(msgs []SlackMessage) violations {
	var v violations
	for mi, m := range msgs {
		w := fmt.Sprintf("message %d", mi)
		v.check(len(m.Blocks) > 0 && len(m.Blocks) <= SlackMaxBlocks, "%s: %d blocks", w, len(m.Blocks))
		v.text(w+" text", m.Text, SlackMaxFallbackText)
		v.mentions(w+" text", m.Text)
		v.check(!strings.ContainsAny(m.Text, "<>"), "%s: notification text must be escaped: %q", w, m.Text)
		validateSlackBlocks(&v, w, m.Blocks)
	}
	return v
}

func validateSlackBlocks(v *violations, w string, blocks []SlackBlock) {
	for bi, b := range blocks {
		bw := fmt.Sprintf("%s block %d (%s)", w, bi, b.Type)
		if b.Text != nil {
			limit := SlackMaxSectionText
			if b.Type == "header" {
				limit = SlackMaxHeader
				v.check(b.Text.Type == "plain_text", "%s: header must be plain_text", bw)
			}
			v.text(bw, b.Text.Text, limit)
			v.mentions(bw, b.Text.Text)
		}
		v.check(len(b.Fields) <= SlackMaxFields, "%s: %d fields", bw, len(b.Fields))
		for _, f := range b.Fields {
			v.text(bw+" field", f.Text, SlackMaxFieldText)
			v.mentions(bw+" field", f.Text)
		}
		switch b.Type {
		case "actions":
			v.check(len(b.Elements) > 0 && len(b.Elements) <= SlackMaxActions, "%s: %d elements", bw, len(b.Elements))
		case "context":
			v.check(len(b.Elements) > 0 && len(b.Elements) <= SlackMaxContextItems, "%s: %d elements", bw, len(b.Elements))
		case "section":
			v.check(b.Text != nil || len(b.Fields) > 0, "%s: empty section", bw)
		case "input":
			v.check(b.Label != nil && b.Element != nil, "%s: input needs label and element", bw)
			if b.Label != nil {
				v.text(bw+" label", b.Label.Text, SlackMaxInputLabel)
			}
			if b.Element != nil {
				validateSlackElement(v, bw, *b.Element)
			}
		}
		for _, e := range b.Elements {
			switch e := e.(type) {
			case SlackElement:
				validateSlackElement(v, bw, e)
			case SlackText:
				v.text(bw+" context", e.Text, SlackMaxSectionText)
			default:
				v.check(false, "%s: element of type %T", bw, e)
			}
		}
	}
}

func validateSlackElement(v *violations, bw string, e SlackElement) {
	v.check(len(e.ActionID) > 0 && len(e.ActionID) <= 255, "%s: action_id length %d", bw, len(e.ActionID))
	if e.Text != nil {
		v.text(bw+" button", e.Text.Text, SlackMaxButtonText)
	}
	limit := SlackMaxSelectOpts
	if e.Type == "radio_buttons" || e.Type == "checkboxes" {
		limit = SlackMaxRadioOpts
	}
	v.check(len(e.Options) <= limit, "%s: %d options", bw, len(e.Options))
	for _, o := range e.Options {
		v.text(bw+" option", o.Text.Text, SlackMaxButtonText)
		v.check(len(o.Value) <= 150, "%s: option value %d bytes", bw, len(o.Value))
	}
}

func validateSlackView(view SlackView) violations {
	var v violations
	v.check(view.Type == "modal", "view type %q", view.Type)
	v.text("title", view.Title.Text, SlackMaxModalTitle)
	v.check(len(view.CallbackID) <= 255, "callback_id too long")
	v.check(len(view.Blocks) <= SlackMaxModalBlocks, "%d blocks", len(view.Blocks))
	validateSlackBlocks(&v, "modal", view.Blocks)
	return v
}

func validateDiscord(msgs []DiscordMessage) violations {
	var v violations
	for mi, m := range msgs {
		w := fmt.Sprintf("message %d", mi)
		v.check(m.AllowedMentions.Parse != nil && len(m.AllowedMentions.Parse) == 0, "%s: allowed_mentions must parse nothing", w)
		v.text(w+" content", m.Content, DiscordMaxContent)
		v.check(len(m.Embeds) <= DiscordMaxEmbeds, "%s: %d embeds", w, len(m.Embeds))
		total := 0
		for ei, e := range m.Embeds {
			ew := fmt.Sprintf("%s embed %d", w, ei)
			v.text(ew+" title", e.Title, DiscordMaxTitle)
			v.text(ew+" description", e.Description, DiscordMaxDescription)
			v.mentions(ew, e.Title+"\n"+e.Description)
			v.check(len(e.Fields) <= DiscordMaxFields, "%s: %d fields", ew, len(e.Fields))
			for _, f := range e.Fields {
				v.text(ew+" field name", f.Name, DiscordMaxFieldName)
				v.text(ew+" field value", f.Value, DiscordMaxFieldValue)
				v.check(strings.TrimSpace(f.Name) != "" && strings.TrimSpace(f.Value) != "", "%s: empty field", ew)
				v.mentions(ew+" field", f.Name+"\n"+f.Value)
			}
			if e.Footer != nil {
				v.text(ew+" footer", e.Footer.Text, DiscordMaxFooter)
			}
			total += embedSize(e)
		}
		v.check(total <= DiscordMaxEmbedTotal, "%s: %d embed characters", w, total)
		v.check(m.Flags&DiscordFlagComponentsV2 == 0, "%s: a message of embeds is not a V2 message", w)
		validateDiscordRows(&v, w, m.Components)
	}
	return v
}

func validateDiscordRows(v *violations, w string, rows []DiscordComponent) {
	v.check(len(rows) <= DiscordMaxRows, "%s: %d rows", w, len(rows))
	for ri, r := range rows {
		validateDiscordRow(v, fmt.Sprintf("%s row %d", w, ri), r)
	}
}

// validateDiscordRow checks one action row of a message: up to five buttons, or one string select.
func validateDiscordRow(v *violations, rw string, r DiscordComponent) {
	v.check(r.Type == DiscordActionRow, "%s: type %d", rw, r.Type)
	v.check(len(r.Components) > 0 && len(r.Components) <= DiscordMaxButtons, "%s: %d components", rw, len(r.Components))
	for _, c := range r.Components {
		v.check(len(c.CustomID) > 0 && len(c.CustomID) <= DiscordMaxCustomID, "%s: custom_id length %d", rw, len(c.CustomID))
		switch c.Type {
		case DiscordButton:
			v.text(rw+" label", c.Label, DiscordMaxButtonLabel)
		case DiscordStringSelect:
			v.check(len(r.Components) == 1, "%s: a select must be alone in its row", rw)
			validateDiscordSelect(v, rw, c)
		default:
			v.check(false, "%s: component type %d", rw, c.Type)
		}
	}
}

// validateDiscordSelect checks a string select: 1–25 options of labels and values up to 100
// characters, a placeholder up to 150, min_values and max_values up to 25.
func validateDiscordSelect(v *violations, w string, c DiscordComponent) {
	v.check(len(c.Options) > 0 && len(c.Options) <= DiscordMaxSelectOptions, "%s: %d options", w, len(c.Options))
	for _, o := range c.Options {
		v.text(w+" option", o.Label, DiscordMaxOptionLabel)
		v.check(len(o.Value) > 0 && len(o.Value) <= 100, "%s: option value %d", w, len(o.Value))
	}
	v.text(w+" placeholder", c.Placeholder, 150)
	if c.MinValues != nil {
		v.check(*c.MinValues >= 0 && *c.MinValues <= 25, "%s: min_values %d", w, *c.MinValues)
	}
	if c.MaxValues != nil {
		v.check(*c.MaxValues >= 1 && *c.MaxValues <= 25 && *c.MaxValues <= len(c.Options), "%s: max_values %d", w, *c.MaxValues)
	}
}

// validateDiscordModal checks a modal as the Component Reference has it: a title up to 45
// characters, 1–5 labels (label up to 45, description up to 100), each wrapping one text input
// (style, custom_id, placeholder up to 100, max_length up to 4,000, required set, no label of its
// own) or one string select (which may not be disabled in a modal; min_values at least 1 unless
// required is false); custom_ids unique.
func validateDiscordModal(m DiscordModal) violations {
	var v violations
	v.text("title", m.Title, DiscordMaxModalTitle)
	v.check(len(m.CustomID) > 0 && len(m.CustomID) <= DiscordMaxCustomID, "custom_id length %d", len(m.CustomID))
	v.check(len(m.Components) > 0 && len(m.Components) <= 5, "%d components, want 1–5", len(m.Components))
	ids := map[string]bool{}
	for i, l := range m.Components {
		w := fmt.Sprintf("modal label %d", i)
		v.check(l.Type == DiscordLabel, "%s: type %d, want a label", w, l.Type)
		v.check(strings.TrimSpace(l.Label) != "", "%s: empty label", w)
		v.text(w+" label", l.Label, 45)
		v.text(w+" description", l.Description, 100)
		if l.Component == nil {
			v.check(false, "%s: no component", w)
			continue
		}
		c := *l.Component
		v.check(len(c.CustomID) > 0 && len(c.CustomID) <= DiscordMaxCustomID, "%s: custom_id length %d", w, len(c.CustomID))
		v.check(!ids[c.CustomID], "%s: custom_id %q used twice", w, c.CustomID)
		ids[c.CustomID] = true
		switch c.Type {
		case DiscordTextInput:
			v.check(c.Style == DiscordInputShort || c.Style == DiscordInputParagraph, "%s: style %d", w, c.Style)
			v.check(c.Label == "", "%s: a text input in a label has no label of its own", w)
			v.text(w+" placeholder", c.Placeholder, DiscordMaxPlaceholder)
			v.check(c.MaxLength >= 0 && c.MaxLength <= 4000, "%s: max_length %d", w, c.MaxLength)
			v.check(c.Required != nil, "%s: text input must set required", w)
		case DiscordStringSelect:
			validateDiscordSelect(&v, w, c)
			required := c.Required == nil || *c.Required
			v.check(!required || c.MinValues == nil || *c.MinValues >= 1, "%s: a required select needs min_values of at least 1", w)
		default:
			v.check(false, "%s: component type %d in a label", w, c.Type)
		}
	}
	return v
}

var telegramTags = map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-spoiler": true}

// validTelegramHTML reports why s is not acceptable to Telegram's HTML parse
// mode: unsupported or unbalanced tags, a raw < > or &, an unknown entity.
func validTelegramHTML(s string) error {
	var stack []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("raw < at %d", i)
			}
			tag := s[i+1 : i+end]
			i += end
			if strings.HasPrefix(tag, "/") {
				if len(stack) == 0 || stack[len(stack)-1] != tag[1:] {
					return fmt.Errorf("unbalanced </%s>", tag[1:])
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name := tagName(tag)
			if !telegramTags[name] {
				return fmt.Errorf("unsupported tag <%s>", tag)
			}
			if name == "blockquote" && contains(stack, "blockquote") {
				return fmt.Errorf("nested blockquote")
			}
			if contains(stack, "code") || (contains(stack, "pre") && name != "code") {
				return fmt.Errorf("<%s> inside code", name)
			}
			stack = append(stack, name)
		case '>':
			return fmt.Errorf("raw > at %d", i)
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 {
				return fmt.Errorf("raw & at %d", i)
			}
			ent := s[i : i+end+1]
			if ent != "&lt;" && ent != "&gt;" && ent != "&amp;" && ent != "&quot;" && !strings.HasPrefix(ent, "&#") {
				return fmt.Errorf("entity %s", ent)
			}
			i += end
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %v", stack)
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func validateTelegram(msgs []TelegramMessage) violations {
	var v violations
	for mi, m := range msgs {
		w := fmt.Sprintf("message %d", mi)
		v.shown(w, m.Text, TelegramMaxText)
		v.check(m.ParseMode == "HTML", "%s: parse mode %q", w, m.ParseMode)
		if err := validTelegramHTML(m.Text); err != nil {
			v.check(false, "%s: %v", w, err)
		}
		v.mentions(w, m.Text)
		v.check(m.ReplyMarkup == nil || mi == len(msgs)-1, "%s: keyboard not on the last message", w)
		if m.ReplyMarkup != nil {
			for _, r := range m.ReplyMarkup.InlineKeyboard {
				for _, b := range r {
					v.check(len(b.CallbackData) > 0 && len(b.CallbackData) <= TelegramMaxCallbackData, "%s: callback_data %d bytes", w, len(b.CallbackData))
					v.text(w+" button", b.Text, TelegramMaxButtonText)
				}
			}
		}
	}
	return v
}

func validatePlain(pieces []string) violations {
	var v violations
	v.check(len(pieces) > 0, "no pieces")
	for i, p := range pieces {
		v.text(fmt.Sprintf("piece %d", i), p, PlainMaxText)
		v.mentions(fmt.Sprintf("piece %d", i), p)
	}
	return v
}
