package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark/text"
)

func TestConvertMarkdownEachDialect(t *testing.T) {
	tests := []struct {
		name                            string
		md                              string
		plain, slack, discord, telegram string
	}{
		{"emphasis and strong", "a *b* **c** ~~d~~",
			"a b c d", "a _b_ *c* ~d~", "a *b* **c** ~~d~~", "a <i>b</i> <b>c</b> <s>d</s>"},
		{"inline code keeps its text", "run `a<b && c`",
			"run `a<b && c`", "run `a&lt;b &amp;&amp; c`", "run `a<b && c`", "run <code>a&lt;b &amp;&amp; c</code>"},
		{"link", "[docs](https://x.io/a?b=1&c=2)",
			"docs (https://x.io/a?b=1&c=2)", "<https://x.io/a?b=1&amp;c=2|docs>", "[docs](https://x.io/a?b=1&c=2)",
			`<a href="https://x.io/a?b=1&amp;c=2">docs</a>`},
		{"unsafe link keeps only its text", "[click](javascript:alert(1))", "click", "click", "click", "click"},
		{"heading becomes bold", "## Title", "Title", "*Title*", "**Title**", "<b>Title</b>"},
		{"nested list", "- a\n  - b\n- c",
			"- a\n  - b\n- c", "• a\n  • b\n• c", "- a\n  - b\n- c", "• a\n  • b\n• c"},
		{"ordered list keeps its start", "3. x\n4. y", "3. x\n4. y", "3. x\n4. y", "3. x\n4. y", "3. x\n4. y"},
		{"blockquote", "> q\n>\n> r", "> q\n>\n> r", "> q\n>\n> r", "> q\n>\n> r", "<blockquote>q\n\nr</blockquote>"},
		{"fenced code with language", "```go\nx := 1 < 2\n```",
			"```\nx := 1 < 2\n```", "```\nx := 1 &lt; 2\n```", "```go\nx := 1 < 2\n```",
			`<pre><code class="language-go">x := 1 &lt; 2</code></pre>`},
		{"code fence inside code cannot close it", "````\n```\n````",
			"```\n`\u200b``\n```", "```\n`\u200b``\n```", "```\n`\u200b``\n```", "<pre>```</pre>"},
		{"table as monospace", "| a | bb |\n|---|---|\n| 1 | 2 |",
			"```\na | bb\n--+---\n1 | 2\n```", "```\na | bb\n--+---\n1 | 2\n```", "```\na | bb\n--+---\n1 | 2\n```",
			"<pre>a | bb\n--+---\n1 | 2</pre>"},
		{"literal markup is escaped", `\*not\* <i>x</i> & 5 > 3`,
			"*not* <i>x</i> & 5 > 3", "*not* &lt;i&gt;x&lt;/i&gt; &amp; 5 &gt; 3", `\*not\* <i>x</i> & 5 > 3`,
			"*not* &lt;i&gt;x&lt;/i&gt; &amp; 5 &gt; 3"},
		{"mentions neutralized", "@everyone <@123>",
			"@\u200beveryone <@\u200b123>", "@\u200beveryone &lt;@\u200b123&gt;", "@\u200beveryone <@\u200b123>",
			"@\u200beveryone &lt;@\u200b123&gt;"},
		{"mention split by an entity is still caught", "@&#101;veryone", "@\u200beveryone", "@\u200beveryone", "@\u200beveryone", "@\u200beveryone"},
		{"telegram keeps code out of other entities", "**bold `code`**",
			"bold `code`", "*bold `code`*", "**bold `code`**", "<b>bold code</b>"},
		{"telegram never nests blockquotes", "> a\n> > b", "> a\n>\n> > b", "> a\n>\n> > b", "> a\n>\n> > b", "<blockquote>a\n\nb</blockquote>"},
	}
	for _, tt := range tests {
		for d, want := range map[Dialect]string{DialectPlain: tt.plain, DialectSlack: tt.slack, DialectDiscord: tt.discord, DialectTelegram: tt.telegram} {
			t.Run(tt.name+"/"+d.String(), func(t *testing.T) {
				if got := ConvertMarkdown(tt.md, d); got != want {
					t.Fatalf("ConvertMarkdown(%q, %s)\n got %q\nwant %q", tt.md, d, got, want)
				}
			})
		}
	}
}

func TestConvertMarkdownReplacesInvalidUTF8(t *testing.T) {
	for _, d := range []Dialect{DialectPlain, DialectSlack, DialectDiscord, DialectTelegram} {
		if got := ConvertMarkdown("a\xffb", d); !utf8.ValidString(got) || !strings.Contains(got, "\uFFFD") {
			t.Fatalf("%s: %q", d, got)
		}
	}
}

func TestNeutralizeMentions(t *testing.T) {
	tests := []struct{ in, want string }{
		{"@everyone", "@\u200beveryone"},
		{"hi @HERE!", "hi @\u200bHERE!"},
		{"@channel.", "@\u200bchannel."},
		{"<!channel> <!here|here> <!subteam^S1>", "<!\u200bchannel> <!\u200bhere|here> <!\u200bsubteam^S1>"},
		{"<@U123> <@!42> <@&7>", "<@\u200bU123> <@\u200b!42> <@\u200b&7>"},
		{"me@here.com", "me@here.com"},
		{"@everyoneelse @heres", "@\u200beveryoneelse @\u200bheres"},
		{"already @\u200beveryone <@\u200b1>", "already @\u200beveryone <@\u200b1>"},
		{"no mentions", "no mentions"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := NeutralizeMentions(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if again := NeutralizeMentions(tt.want); again != tt.want {
				t.Fatalf("not idempotent: %q", again)
			}
		})
	}
}

func TestFieldsFromJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Field
		wantErr bool
	}{
		{"object keeps key order", `{"z":"last?","a":1,"n":{"x":[1, 2]}}`,
			[]Field{{"z", "last?", true}, {"a", "1", true}, {"n", `{"x":[1,2]}`, true}}, false},
		{"scalar", `"just text"`, []Field{{"value", "just text", true}}, false},
		{"array", `[1, 2]`, []Field{{"value", "[1,2]", true}}, false},
		{"invalid", `{"a":`, nil, true},
		{"trailing data", `{"a":1} {}`, nil, true},
		{"empty", ``, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FieldsFromJSON([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("field %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// fuzzConverter converts, chunks to the platform limit and to a small limit,
// and checks what every adapter relies on.
func fuzzConverter(f *testing.F, d Dialect, limit int) {
	for _, s := range []string{markdownBody, escapingBody, unicodeBody, "```go\n" + strings.Repeat("x\n", 3000) + "```",
		"**" + strings.Repeat("a ", 3000) + "**", "> > > deep\n> - list\n>   ```\n>   code\n>   ```", "| a |\n|---|\n| <b> |",
		"[x](https://a.b/<>) <mailto:x@y.z> ![img](https://i.io/a.png)", "&#0; &#xD800; \x00 \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := ConvertMarkdown(md, d)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 output %q", out)
		}
		for _, lim := range []int{limit, MinChunkLimit} {
			for _, p := range Chunk(out, lim, d) {
				var v violations
				if d == DialectTelegram {
					v.shown("piece", p, lim)
				} else {
					v.text("piece", p, lim)
				}
				v.mentions("piece", p)
				if d == DialectTelegram {
					if err := validTelegramHTML(p); err != nil {
						v.check(false, "bad HTML %v in %q", err, p)
					}
				}
				for _, e := range v {
					t.Fatalf("limit %d: %s", lim, e)
				}
			}
		}
	})
}

func FuzzMarkdownSlack(f *testing.F)    { fuzzConverter(f, DialectSlack, SlackMaxSectionText) }
func FuzzMarkdownDiscord(f *testing.F)  { fuzzConverter(f, DialectDiscord, DiscordMaxContent) }
func FuzzMarkdownTelegram(f *testing.F) { fuzzConverter(f, DialectTelegram, TelegramMaxText) }
func FuzzMarkdownPlain(f *testing.F)    { fuzzConverter(f, DialectPlain, PlainMaxText) }

// slowConvert is ConvertMarkdown without its plain-line shortcut.
func slowConvert(md string, d Dialect) string {
	src := []byte(md)
	c := converter{src: src, d: d}
	return NeutralizeMentions(strings.Trim(c.container(mdParser.Parse(text.NewReader(src)), "\n\n"), "\n"))
}

// TestPlainLineShortcut proves the lines ConvertMarkdown takes without the parser convert
// exactly as the parser would, and that lines with markup are not taken.
func TestPlainLineShortcut(t *testing.T) {
	plain := []string{"echo: m1 c2", "Hello, world.", "a", "It costs $42; see https://example.com/a?b=c.", "Ping @everyone now",
		"Price über 5 € — \u00e9t\u00e9 ok", "tel: +1 555-0100", "x {y} \"z\" 'w' / 50% ^ = ;"}
	for _, md := range plain {
		if !plainLine(md) {
			t.Errorf("plainLine(%q) = false, want true", md)
		}
		for d := DialectPlain; d <= DialectTelegram; d++ {
			if got, want := ConvertMarkdown(md, d), slowConvert(md, d); got != want {
				t.Errorf("%v %q: shortcut %q, parser %q", d, md, got, want)
			}
		}
	}
	for _, md := range []string{"", " lead", "trail ", "1. one", "- item", "# head", "**b**", "a *b*", "a_b_", "a `c`", "a [l](u)",
		"a <b>", "a &amp;", "a\\*", "a\nb", "a\tb", "a ~~s~~", "a | b", "a !b", "+ x", "> q", "\u00e9 starts non-ASCII"} {
		if plainLine(md) {
			t.Errorf("plainLine(%q) = true, want false", md)
		}
	}
}

// FuzzPlainLineShortcut checks the shortcut against the parser on every line it takes.
func FuzzPlainLineShortcut(f *testing.F) {
	for _, s := range []string{"echo: m1 c2", "Hi @here", "A  b", "Ab\u00a0", "x\u200b@everyone", "a:b//c", "Z 1) 2."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) || !plainLine(md) {
			return
		}
		for d := DialectPlain; d <= DialectTelegram; d++ {
			if got, want := ConvertMarkdown(md, d), slowConvert(md, d); got != want {
				t.Fatalf("%v %q: shortcut %q, parser %q", d, md, got, want)
			}
		}
	})
}
