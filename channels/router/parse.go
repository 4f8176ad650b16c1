package router

import (
	"strings"
	"unicode/utf8"
)

// Parser limits: input past them is not a command or an answer.
const (
	maxCommandName = 32
	maxCommandArgs = 16
	maxAnswerLen   = 200
)

// ParseCommand parses a text command: "/name arg…". The name is lower-cased and must be 1–32
// characters of [a-z0-9_]; a trailing "@botname" on the name is dropped (adapters usually strip
// it already). Args are the whitespace-separated words after the name, at most 16 (the rest are
// joined into the last). ok is false for anything else — the text is then an ordinary message.
func ParseCommand(text string) (name string, args []string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") || !utf8.ValidString(text) {
		return "", nil, false
	}
	head, rest, _ := strings.Cut(text[1:], " ")
	if i := strings.IndexAny(head, "\t\n\r"); i >= 0 {
		head, rest = head[:i], head[i+1:]+" "+rest
	}
	head, _, _ = strings.Cut(head, "@")
	head = strings.ToLower(head)
	if head == "" || len(head) > maxCommandName {
		return "", nil, false
	}
	for i := 0; i < len(head); i++ {
		c := head[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", nil, false
		}
	}
	words := strings.Fields(rest)
	if len(words) > maxCommandArgs {
		words = append(words[:maxCommandArgs-1], strings.Join(words[maxCommandArgs-1:], " "))
	}
	if len(words) == 0 {
		words = nil
	}
	return head, words, true
}

// ParseAnswer parses a typed reply to a numbered list of n options, as the plain-text renderer
// numbers them (1 to n): "2" picks the second option; with multi, "1,3", "1, 3" or "1 3" pick
// several. It returns the 0-based option indexes in the order given, without repeats. ok is
// false when the reply is not such a list: empty, not numbers, out of range, several numbers
// when multi is false, or longer than 200 bytes.
func ParseAnswer(text string, n int, multi bool) (options []int, ok bool) {
	text = strings.TrimSpace(text)
	if text == "" || len(text) > maxAnswerLen || n <= 0 {
		return nil, false
	}
	parts := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	if len(parts) == 0 || (!multi && len(parts) != 1) {
		return nil, false
	}
	seen := make(map[int]bool, len(parts))
	for _, p := range parts {
		p = strings.TrimSuffix(p, ".")
		if p == "" || len(p) > 3 {
			return nil, false
		}
		v := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return nil, false
			}
			v = v*10 + int(p[i]-'0')
		}
		if v < 1 || v > n {
			return nil, false
		}
		if !seen[v-1] {
			seen[v-1] = true
			options = append(options, v-1)
		}
	}
	return options, true
}
