package conformance

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Telegram's HTML parse mode (Formatting options, HTML style,
// https://core.telegram.org/bots/api#html-style): the rules and the visible text the length
// limits count, shared by the rules here and the Telegram fake.

// allowedTags are the tags Telegram's HTML parse mode accepts.
var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// TelegramHTML checks s the way the Bot API checks text sent with parse_mode HTML: only Telegram's
// tags, every tag closed in order, only the entities &lt; &gt; &amp; &quot; and numeric ones,
// no stray '<', '>' or '&'. It returns the visible text (tags removed, entities decoded), or an
// error describing the first problem.
func TelegramHTML(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("text must be encoded in UTF-8")
	}
	var out strings.Builder
	var stack []string
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := s[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				name := strings.TrimSpace(tag[1:])
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unexpected end tag at byte offset %d", i)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, attrs, _ := strings.Cut(tag, " ")
				if !allowedTags[name] {
					return "", fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
				}
				if err := checkAttrs(name, attrs); err != nil {
					return "", fmt.Errorf("%v at byte offset %d", err, i)
				}
				stack = append(stack, name)
			}
			i += end + 1
		case '>':
			return "", fmt.Errorf("character '>' is reserved at byte offset %d", i)
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 || end > 10 {
				return "", fmt.Errorf("unsupported entity at byte offset %d", i)
			}
			r, ok := decodeEntity(s[i+1 : i+end])
			if !ok {
				return "", fmt.Errorf("unsupported entity %q at byte offset %d", s[i:i+end+1], i)
			}
			out.WriteRune(r)
			i += end + 1
		default:
			out.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return out.String(), nil
}

func checkAttrs(name, attrs string) error {
	attrs = strings.TrimSpace(attrs)
	switch name {
	case "a":
		if !strings.HasPrefix(attrs, `href="`) || !strings.HasSuffix(attrs, `"`) {
			return fmt.Errorf("tag \"a\" needs an href attribute")
		}
	case "span":
		if attrs != `class="tg-spoiler"` {
			return fmt.Errorf("tag \"span\" must have class \"tg-spoiler\"")
		}
	case "code":
		if attrs != "" && !(strings.HasPrefix(attrs, `class="language-`) && strings.HasSuffix(attrs, `"`)) {
			return fmt.Errorf("unsupported attribute of tag \"code\"")
		}
	case "blockquote":
		if attrs != "" && attrs != "expandable" {
			return fmt.Errorf("unsupported attribute of tag \"blockquote\"")
		}
	case "tg-emoji":
		if !strings.HasPrefix(attrs, `emoji-id="`) {
			return fmt.Errorf("tag \"tg-emoji\" needs an emoji-id attribute")
		}
	default:
		if attrs != "" {
			return fmt.Errorf("unsupported attribute of tag %q", name)
		}
	}
	return nil
}

func decodeEntity(e string) (rune, bool) {
	switch e {
	case "lt":
		return '<', true
	case "gt":
		return '>', true
	case "amp":
		return '&', true
	case "quot":
		return '"', true
	}
	if len(e) < 2 || e[0] != '#' {
		return 0, false
	}
	var n int64
	digits, base := e[1:], int64(10)
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if digits == "" {
		return 0, false
	}
	for _, d := range digits {
		var v int64
		switch {
		case d >= '0' && d <= '9':
			v = int64(d - '0')
		case base == 16 && d >= 'a' && d <= 'f':
			v = int64(d-'a') + 10
		case base == 16 && d >= 'A' && d <= 'F':
			v = int64(d-'A') + 10
		default:
			return 0, false
		}
		n = n*base + v
		if n > utf8.MaxRune {
			return 0, false
		}
	}
	return rune(n), utf8.ValidRune(rune(n))
}

// UTF16Len is the length the Bot API counts: UTF-16 code units.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
