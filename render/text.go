package render

import (
	"strings"
	"unicode/utf16"
)

// Width is the length of s as the platforms count characters, taken
// conservatively as UTF-16 code units: never less than the number of runes,
// which is what Slack, Discord and Telegram limit.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is one rune's Width.
func runeWidth(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

const ellipsis = "…"

// truncate cuts plain (unformatted) text to at most limit characters,
// ending it with "…" when it had to cut. It never splits a rune.
func truncate(s string, limit int) string {
	if Width(s) <= limit {
		return s
	}
	if limit <= 0 {
		return ""
	}
	w := 0
	for i, r := range s {
		rw := runeWidth(r)
		if w+rw > limit-1 {
			return strings.TrimRight(s[:i], " \n\t") + ellipsis
		}
		w += rw
	}
	return s
}

// truncateMarkup cuts text already in dialect d to at most limit characters
// without breaking a tag, entity, code fence or rune, ending it with "…" when
// it had to cut.
func truncateMarkup(s string, limit int, d Dialect) string {
	if VisibleWidth(s, d) <= limit {
		return s
	}
	parts := Chunk(s, limit-1, d)
	if len(parts) == 0 {
		return ""
	}
	return parts[0] + ellipsis
}

const zwsp = "\u200b"

// massMentions are the words that ping a whole room after an '@'.
var massMentions = []string{"everyone", "here", "channel"}

// NeutralizeMentions makes text safe to post: a zero-width space goes after the
// '@' of @everyone, @here and @channel (any case, not preceded by a letter,
// digit, '_' or '/', so e-mail addresses and URLs stay intact; "@heres" is caught too, as some
// clients ping on the prefix), and after
// the opening of Slack and Discord ping syntax (<@U123>, <@123>, <@!123>,
// <@&role>, <!channel>, <!here>, <!everyone>, <!subteam^…>), so none of them
// pings anyone while the text still reads the same.
func NeutralizeMentions(s string) string {
	if !strings.ContainsRune(s, '@') && !strings.Contains(s, "<!") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			if i+1 < len(s) && (s[i+1] == '@' || s[i+1] == '!') && !strings.HasPrefix(s[i+2:], zwsp) {
				b.WriteString(s[last : i+2])
				b.WriteString(zwsp)
				last = i + 2
				i++
			}
		case '@':
			if i > 0 && isWordByte(s[i-1]) {
				continue
			}
			rest := s[i+1:]
			for _, w := range massMentions {
				if len(rest) >= len(w) && strings.EqualFold(rest[:len(w)], w) {
					b.WriteString(s[last : i+1])
					b.WriteString(zwsp)
					last = i + 1
					break
				}
			}
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// NeutralizeUsernames also defuses plain "@username" mentions, for Telegram, where text like
// "@alice" notifies that user in a group (Slack and Discord need their <@…> syntax to ping,
// which NeutralizeMentions handles). A zero-width space goes after an '@' that is followed by a
// letter and not preceded by a letter, digit, '_' or '/', so e-mail addresses and URLs stay
// intact and the text reads the same.
func NeutralizeUsernames(s string) string {
	if !strings.ContainsRune(s, '@') {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '@' || (i > 0 && isWordByte(s[i-1])) {
			continue
		}
		if c := s[i+1]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			if last == 0 {
				b.Grow(len(s) + 8)
			}
			b.WriteString(s[last : i+1])
			b.WriteString(zwsp)
			last = i + 1
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isWordByte is a byte after which an '@' starts no mention: a letter, digit
// or '_' (e-mail addresses) or '/' (URL paths like /@name).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/'
}

// EscapeHTML escapes text for Telegram's HTML parse mode: &, < and > become
// entities, and so does '"' so the result is also safe inside an attribute.
func EscapeHTML(s string) string {
	if !strings.ContainsAny(s, "&<>\"") {
		return s
	}
	return htmlEscaper.Replace(s)
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&quot;")

// EscapeSlack escapes text for Slack mrkdwn (and for a message's text field):
// &, < and > become &amp;, &lt; and &gt;, so nothing is read as a link, a
// mention or a special command.
func EscapeSlack(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return slackEscaper.Replace(s)
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// EscapeDiscord backslash-escapes Discord markdown so text shows literally:
// \ * _ ~ ` | anywhere, and # > - at the start of a line.
func EscapeDiscord(s string) string {
	if !strings.ContainsAny(s, "\\*_~`|#>-") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	lineStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '~', '`', '|':
			b.WriteByte('\\')
		case '#', '>', '-':
			if lineStart {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
		lineStart = c == '\n' || (lineStart && (c == ' ' || c == '\t'))
	}
	return b.String()
}
