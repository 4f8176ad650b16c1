package attach

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the model reads about a file is one section of Result.Text: a header line in square
// brackets saying what the file is and what became of it, and, when the file's text (or its
// transcript) follows, that text between two fence lines and an end line:
//
//	[Attached file "notes.md" (text/markdown, 1.2 kB): its text is between the two ``` lines below]
//	```
//	…the text…
//	```
//	[end of "notes.md"]
//
// The text is the user's, so it must not be able to end its frame early and write what looks
// like our own words after it (a file holding `[end of "notes.md"]` and then instructions).
// The fence is what it cannot forge: a run of backticks one longer than the longest run inside
// the text (three at least), so no line of the text is the closing fence. Markdown's rule for
// code fences is the same, so the model already reads it that way. The fence depends only on
// the text, so the same message is framed the same way every time (no random marker to break
// caching or tests), and the header names the fence, so the model is told where the text ends
// rather than left to guess. The names in headers are cleaned (cleanName) so they cannot break
// the header either.

// maxNameRunes caps a file name in a header.
const maxNameRunes = 64

// cleanName makes a user's file name safe to quote in a header: invalid UTF-8, control and
// format characters (bidirectional overrides, zero-width characters), brackets, quotes and
// backticks are removed, runs of white space (newlines among them) become one space, and a
// name longer than maxNameRunes keeps its start and end (the extension) around an ellipsis.
// A name with nothing left is called fallback.
func cleanName(name, fallback string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(name, "") {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), strings.ContainsRune("[]{}<>\"`", r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" {
		return fallback
	}
	if n := utf8.RuneCountInString(s); n > maxNameRunes {
		runes := []rune(s)
		s = string(runes[:maxNameRunes-16]) + "…" + string(runes[n-15:])
	}
	return s
}

// fenceFor returns the fence that frames text: backticks, one more than its longest run of
// them, three at least.
func fenceFor(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// framed is a section whose header ends in what (which names the fence) and whose body is text.
func framed(header, text, name string, what func(fence string) string) string {
	f := fenceFor(text)
	return "[" + header + ": " + what(f) + "]\n" + f + "\n" + text + "\n" + f + "\n[end of \"" + name + "\"]"
}

// describe is "<noun> "<name>" (<type>, <size>)", the start of every header; type and size are
// left out when empty or negative.
func describe(noun, name, mediaType string, size int64) string {
	var details []string
	if mediaType != "" {
		details = append(details, mediaType)
	}
	if size >= 0 {
		details = append(details, humanSize(size))
	}
	s := noun + " \"" + name + "\""
	if len(details) > 0 {
		s += " (" + strings.Join(details, ", ") + ")"
	}
	return s
}

// humanSize is n bytes as people read file sizes: "512 bytes", "1.2 kB", "40 kB", "20 MB"
// (kB and MB of 1024, as chat platforms count their limits).
func humanSize(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	}
	v, unit := float64(n)/(1<<10), "kB"
	switch {
	case n >= 1<<30:
		v, unit = float64(n)/(1<<30), "GB"
	case n >= 1<<20:
		v, unit = float64(n)/(1<<20), "MB"
	}
	if v < 9.95 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + unit
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}
