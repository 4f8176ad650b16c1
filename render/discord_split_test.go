package render

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// embedFields are the fields of every embed of msgs, in the order they show.
func embedFields(msgs []DiscordMessage) []DiscordEmbedField {
	var out []DiscordEmbedField
	for _, m := range msgs {
		for _, e := range m.Embeds {
			out = append(out, e.Fields...)
		}
	}
	return out
}

// values are the fields' values.
func values(fs []DiscordEmbedField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Value
	}
	return out
}

// coverExactly fails unless pieces, in order, are text cut at white space: each piece is the
// next part of text once the white space at the cut is skipped, and only white space is left.
func coverExactly(t *testing.T, text string, pieces []string) {
	t.Helper()
	pos := 0
	for i, p := range pieces {
		for pos < len(text) && unicode.IsSpace(rune(text[pos])) {
			pos++
		}
		if !strings.HasPrefix(text[pos:], p) {
			t.Fatalf("piece %d (%d chars) is not the text at offset %d: %.80q…", i, len(p), pos, p)
		}
		pos += len(p)
	}
	if rest := text[pos:]; strings.TrimSpace(rest) != "" {
		t.Fatalf("%d characters of text missing after the last piece: %.80q…", len(rest), rest)
	}
}

// shown is text as a reader sees it across cuts: without the fence lines (a cut code block is
// closed and reopened) and without white space (a cut falls on it).
func shown(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			continue
		}
		for _, r := range line {
			if !unicode.IsSpace(r) {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func paragraphs(n int, words string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Paragraph %d: %s\n\n", i+1, words)
	}
	return strings.TrimSpace(b.String())
}

func TestDiscordLongFieldValueContinuesInFieldsNotTruncated(t *testing.T) {
	value := strings.Repeat("Plain words in a long field value ", 150) // 5,100 characters, no blank line
	card := Card{Title: "Report", Status: StatusDone, Fields: []Field{{Label: "Notes", Value: value, Inline: true}, {Label: "After", Value: "x"}}}
	msgs, err := Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	fs := embedFields(msgs)
	if len(fs) < 6 {
		t.Fatalf("%d fields for a 5,100-character value, want it over at least 5 fields and the next", len(fs))
	}
	notes := fs[:len(fs)-1]
	for i, f := range notes {
		want := "Notes"
		if i > 0 {
			want = "Notes (continued)"
		}
		if f.Name != want || f.Inline {
			t.Errorf("field %d: name %q inline %v, want %q not inline", i, f.Name, f.Inline, want)
		}
		if strings.HasSuffix(f.Value, ellipsis) {
			t.Errorf("field %d ends in an ellipsis: truncated", i)
		}
	}
	coverExactly(t, value, values(notes))
	if last := fs[len(fs)-1]; last.Name != "After" || last.Value != "x" {
		t.Errorf("the next field is %+v", last)
	}
}

func TestDiscordLongCodeBlockIsSplitWithFencesReopened(t *testing.T) {
	var code strings.Builder
	for i := range 120 {
		fmt.Fprintf(&code, "fmt.Println(\"line %03d of a long code block\")\n", i)
	}
	summary := "The script:\n\n```go\n" + code.String() + "```\n\nThat is all."
	card := Card{Title: "Code", Status: StatusDone, Subagents: []SubagentResult{{Name: "coder", StopReason: "completed", Summary: summary}}}
	msgs, err := Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	fs := embedFields(msgs)
	if len(fs) < 5 {
		t.Fatalf("%d fields for a 5,000-character code block", len(fs))
	}
	var lines []string
	for i, f := range fs {
		if fences := strings.Count("\n"+f.Value, "\n```"); fences%2 != 0 {
			t.Errorf("field %d has %d fence lines: a code block left open\n%s", i, fences, f.Value)
		}
		for _, l := range strings.Split(f.Value, "\n") {
			if strings.HasPrefix(l, "fmt.Println") {
				lines = append(lines, l)
			}
		}
	}
	if got := strings.Join(lines, "\n") + "\n"; got != code.String() {
		t.Errorf("the code lines across fields differ from the block's (%d lines, want 120)", len(lines))
	}
	if got, want := shown(strings.Join(values(fs), "\n")), shown(discordSubagentValue(card.Subagents[0])); got != want {
		t.Errorf("fields show %d characters, the result %d", len(got), len(want))
	}
}

func TestDiscordCodeBlockThatFitsAFieldIsNotCut(t *testing.T) {
	block := "```python\n" + strings.Repeat("print('a line of code')\n", 30) + "```" // 730 characters
	summary := paragraphs(4, strings.Repeat("words ", 30)) + "\n\n" + block + "\n\nDone."
	card := Card{Title: "Code", Status: StatusDone, Subagents: []SubagentResult{{Name: "coder", StopReason: "completed", Summary: summary}}}
	msgs, err := Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	whole := 0
	for _, f := range embedFields(msgs) {
		if strings.Contains(f.Value, block) {
			whole++
		}
		if strings.Count(f.Value, "```") == 1 {
			t.Errorf("a field holds part of the block:\n%s", f.Value)
		}
	}
	if whole != 1 {
		t.Errorf("the block is whole in %d fields, want 1", whole)
	}
}

func TestDiscordManyLongFieldsFillFurtherEmbedsAndMessages(t *testing.T) {
	var card Card
	card.Title, card.Status = "Inventory", StatusDone
	card.Actions = []Action{{Label: "Cancel", ID: ActionID{Kind: ActionButton, Token: "run1"}}}
	for i := range 60 {
		card.Fields = append(card.Fields, Field{Label: fmt.Sprintf("Item %d", i), Value: paragraphs(6, fmt.Sprintf("item %d, one of many facts", i))})
	}
	msgs, err := Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	if len(msgs) < 2 {
		t.Fatalf("%d messages for 60 fields of about 200 characters", len(msgs))
	}
	for i, m := range msgs {
		if (len(m.Components) > 0) != (i == len(msgs)-1) {
			t.Errorf("message %d of %d has %d component rows: they ride on the last", i, len(msgs), len(m.Components))
		}
	}
	fs := embedFields(msgs)
	if len(fs) != 60 {
		t.Fatalf("%d fields, want 60", len(fs))
	}
	for i, f := range fs {
		if want := fmt.Sprintf("Item %d", i); f.Name != want || f.Value != discordEsc(card.Fields[i].Value) {
			t.Errorf("field %d is %q, want %q with its whole value", i, f.Name, want)
		}
	}

	// Each field over a field's limit: every one continues, in order, nothing lost.
	for i := range card.Fields {
		card.Fields[i].Value = paragraphs(40, fmt.Sprintf("item %d, a long fact", i))
	}
	msgs, err = Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	fs = embedFields(msgs)
	item := -1
	var pieces []string
	check := func() {
		if item >= 0 {
			coverExactly(t, discordEsc(card.Fields[item].Value), pieces)
		}
	}
	for _, f := range fs {
		if f.Name == fmt.Sprintf("Item %d (continued)", item) {
			pieces = append(pieces, f.Value)
			continue
		}
		check()
		item++
		if f.Name != fmt.Sprintf("Item %d", item) {
			t.Fatalf("field %q where item %d starts", f.Name, item)
		}
		pieces = []string{f.Value}
	}
	check()
	if item != 59 {
		t.Errorf("items up to %d, want 59", item)
	}
}

func TestDiscordHugeSubagentResultContinuesInFurtherMessages(t *testing.T) {
	sa := SubagentResult{Name: "researcher", StopReason: "completed", Summary: paragraphs(500, "a finding worth keeping in full, every word of it"),
		Structured: []Field{{Label: "verdict", Value: "supported"}}}
	card := Card{Title: "Research", Status: StatusDone, Body: "The answer.", Subagents: []SubagentResult{sa}, Footer: footer}
	msgs, err := Discord(card, testKey)
	if err != nil {
		t.Fatal(err)
	}
	report(t, validateDiscord(msgs))
	value := discordSubagentValue(sa)
	if Width(value) < 30000 || len(msgs) < 6 {
		t.Fatalf("%d messages for a %d-character result", len(msgs), Width(value))
	}
	fs := embedFields(msgs)
	for i, f := range fs {
		want := discordSubagentName(sa)
		if i > 0 {
			want += " (continued)"
		}
		if f.Name != want {
			t.Errorf("field %d named %q, want %q", i, f.Name, want)
		}
	}
	coverExactly(t, value, values(fs))
	if !strings.HasSuffix(fs[len(fs)-1].Value, "**verdict:** supported") {
		t.Errorf("the structured field is not last: %q", fs[len(fs)-1].Value)
	}
	// The results come before the answer, which is in the last message, with the footer.
	last := msgs[len(msgs)-1].Embeds
	if e := last[len(last)-1]; e.Description != "The answer." || e.Footer == nil {
		t.Errorf("last embed %+v, want the body and the footer", e)
	}
}

func TestSplitBlocks(t *testing.T) {
	block := "```\n" + strings.Repeat("b", 30) + "\n```"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"short", "hello", []string{"hello"}},
		{"blank", "  \n ", nil},
		{"code block moves whole", strings.Repeat("a", 50) + "\n" + block, []string{strings.Repeat("a", 50), block}},
		{"text after a block packs with it", block + "\nafter", []string{block + "\nafter"}},
		{"small blocks pack together", "```\nb\n```\n```\nc\n```", []string{"```\nb\n```\n```\nc\n```"}},
		{"an open block runs to the end", "intro\n```go\nx := 1", []string{"intro\n```go\nx := 1\n```"}},
		{"a block longer than a piece is cut and reopened", "```go\n" + strings.Repeat("x\n", 40) + "```",
			[]string{"```go\n" + strings.Repeat("x\n", 27) + "```", "```go\n" + strings.Repeat("x\n", 13) + "```"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitBlocks(tt.in, 64)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || len(got) != len(tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			for _, p := range got {
				if Width(p) > 64 {
					t.Errorf("piece of %d characters: %q", Width(p), p)
				}
			}
		})
	}
}

func TestFenceSegmentsJoinToTheText(t *testing.T) {
	for _, text := range []string{"", "a", "```", "a\n```\nb\n```\nc", "```\nx\n```\n```\ny\n```", "a\n\n```go\nopen", "\n```\n\n```\n\n", "``` \n```x```\n"} {
		var parts []string
		for _, s := range fenceSegments(text) {
			parts = append(parts, s.text)
		}
		if got := strings.Join(parts, "\n"); strings.TrimRight(got, "\n") != strings.TrimRight(text, "\n") {
			t.Errorf("segments of %q join to %q", text, got)
		}
	}
}

// FuzzDiscordCardLosesNothing renders cards with arbitrary text in every part that can be
// long, and checks each message against Discord's limits and that the fields show every
// character of the fields' values and the subagents' results, in order, and the descriptions
// every character of the body.
func FuzzDiscordCardLosesNothing(f *testing.F) {
	f.Add("t", "body", "label", "value", "summary", uint8(1), uint16(1))
	f.Add("Title", markdownBody, "Notes", strings.Repeat("word ", 300), longBody(), uint8(3), uint16(2))
	f.Add("x", "", "@everyone", "```go\n"+strings.Repeat("x := 1\n", 200)+"```", "```\n"+strings.Repeat("y", 3000), uint8(30), uint16(3))
	f.Add(strings.Repeat("T", 300), unicodeBody, strings.Repeat("L", 300), "🚀"+strings.Repeat("é", 1100), "\xff\xfe", uint8(26), uint16(1))
	f.Fuzz(func(t *testing.T, title, body, label, value, summary string, nFields uint8, repeat uint16) {
		if strings.TrimSpace(title) == "" {
			title = "t"
		}
		n := int(repeat%8) + 1
		if len(value)*n*int(nFields%40) > 100_000 || len(summary)*n > 100_000 {
			return // keeps one run short; size is not what this tests
		}
		card := Card{Title: title, Status: StatusDone, Body: body, Footer: footer,
			Subagents: []SubagentResult{{Name: label, StopReason: "completed", Summary: strings.Repeat(summary, n),
				Structured: []Field{{Label: label, Value: value}}}}}
		for i := range int(nFields % 40) {
			card.Fields = append(card.Fields, Field{Label: label, Value: strings.Repeat(value, n), Inline: i%2 == 0})
		}
		msgs, err := Discord(card, testKey)
		if err != nil {
			t.Fatal(err)
		}
		report(t, validateDiscord(msgs))
		want := []string{discordSubagentValue(card.Subagents[0])}
		for _, fld := range card.Fields {
			want = append(want, discordEsc(orDash(fld.Value)))
		}
		if got, want := shown(strings.Join(values(embedFields(msgs)), "\n")), shown(strings.ToValidUTF8(strings.Join(want, "\n"), "\uFFFD")); got != want {
			t.Fatalf("fields show %d characters, want %d", len(got), len(want))
		}
		var desc []string
		for _, m := range msgs {
			for _, e := range m.Embeds {
				desc = append(desc, e.Description)
			}
		}
		if got, want := shown(strings.Join(desc, "\n")), shown(strings.ToValidUTF8(ConvertMarkdown(body, DialectDiscord), "\uFFFD")); got != want {
			t.Fatalf("descriptions show %d characters, the body %d", len(got), len(want))
		}
	})
}

// FuzzSplitBlocks checks splitBlocks on arbitrary text and limits: every piece within the limit,
// valid and not blank; and, on text as ConvertMarkdown writes it (fence lines are ``` and a short
// language), that the pieces show every character of the text, in order.
func FuzzSplitBlocks(f *testing.F) {
	f.Add("a\n```\nb\n```\nc", 64)
	f.Add("```go\n"+strings.Repeat("x\n", 100)+"```\n\n"+strings.Repeat("word ", 100), 100)
	f.Add("```\n```x```\n``` \n\xff", 70)
	f.Add(strings.Repeat("0", 38)+"\n```"+strings.Repeat("0", 135), 111)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = MinChunkLimit + int(uint(limit)%2000)
		check := func(text string) []string {
			pieces := splitBlocks(text, limit)
			for _, p := range pieces {
				if !utf8.ValidString(p) || Width(p) > limit || strings.TrimSpace(p) == "" {
					t.Fatalf("limit %d: bad piece %q", limit, p)
				}
			}
			return pieces
		}
		check(text)
		md := ConvertMarkdown(text, DialectDiscord)
		if got, want := shown(strings.Join(check(md), "\n")), shown(md); got != want {
			t.Fatalf("pieces show %q, the text %q", got, want)
		}
	})
}

// TestChunkKeepsDiscordEscapesWhole: a cut never falls between a backslash and the character it
// escapes, so no piece ends in a stray backslash and none starts with live markdown.
func TestChunkKeepsDiscordEscapesWhole(t *testing.T) {
	for _, text := range []string{
		strings.Repeat(`\_`, 200),
		"x" + strings.Repeat(`\*`, 200),
		`\` + strings.Repeat(`\\\_`, 100),
	} {
		pieces := Chunk(text, 64, DialectDiscord)
		if len(pieces) < 2 {
			t.Fatalf("%d pieces", len(pieces))
		}
		for i, p := range pieces {
			if trailing := len(p) - len(strings.TrimRight(p, `\`)); trailing%2 != 0 {
				t.Errorf("piece %d ends in a stray backslash: %q", i, p)
			}
		}
		if got := strings.Join(pieces, ""); got != text {
			t.Errorf("pieces join to %q", got)
		}
	}
}
