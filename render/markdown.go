package render

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Dialect is a platform's text markup.
type Dialect int

// The dialects ConvertMarkdown writes and Chunk understands.
const (
	// DialectPlain is readable plain text: no markup except ``` fences
	// around code, safe to show on any platform.
	DialectPlain Dialect = iota
	// DialectSlack is Slack mrkdwn with &, < and > escaped.
	DialectSlack
	// DialectDiscord is Discord markdown with literal text backslash-escaped.
	DialectDiscord
	// DialectTelegram is Telegram's HTML parse mode, using only its tags.
	DialectTelegram
)

// String names the dialect.
func (d Dialect) String() string {
	switch d {
	case DialectPlain:
		return "plain"
	case DialectSlack:
		return "slack"
	case DialectDiscord:
		return "discord"
	case DialectTelegram:
		return "telegram"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// The parser is safe for concurrent use: it initializes once and keeps
// per-parse state in a fresh context.
var mdParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)).Parser()

// ConvertMarkdown converts CommonMark (with GFM tables and strikethrough) into
// dialect d: code blocks, inline code, nested lists, links (http, https and
// mailto only; others keep their text), emphasis, strong, strikethrough,
// headings (as bold lines), blockquotes and tables (as monospace blocks). All
// literal text is escaped for the dialect and has its mentions neutralized.
// Invalid UTF-8 is replaced with U+FFFD. The result is not length-limited:
// pass it to Chunk.
func ConvertMarkdown(md string, d Dialect) string {
	if !utf8.ValidString(md) {
		md = strings.ToValidUTF8(md, "\uFFFD")
	}
	if plainLine(md) {
		// Markdown would make one paragraph of one text node of it, unchanged.
		c := converter{d: d}
		return NeutralizeMentions(c.escape(md))
	}
	src := []byte(md)
	doc := mdParser.Parse(text.NewReader(src))
	c := converter{src: src, d: d}
	// Text nodes are neutralized as they are written; this final pass catches
	// a mention assembled across nodes (say "@every" and a link text "one").
	return NeutralizeMentions(strings.Trim(c.container(doc, "\n\n"), "\n"))
}

// plainLine reports whether md is a line markdown leaves as it is: it starts with a letter
// (no list marker, heading or indented code), ends without a space, and holds no line break and
// no character that can open markup, an escape, an entity or raw HTML. Most short answers are
// such lines; ConvertMarkdown skips the parser for them.
func plainLine(md string) bool {
	if md == "" || md[len(md)-1] == ' ' {
		return false
	}
	if c := md[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for i := 0; i < len(md); i++ {
		c := md[i]
		if c < ' ' || c == 0x7f || strings.IndexByte("\\`*_[]()#<>&!|~", c) >= 0 {
			return false
		}
	}
	return true
}

type converter struct {
	src []byte
	d   Dialect
	// styled counts enclosing inline entities; Telegram forbids code inside
	// them, so code spans lose their <code> there.
	styled int
	// quoted is the blockquote depth; Telegram forbids nested blockquotes
	// and code blocks inside one.
	quoted int
}

// container renders a node's block children, separated by sep.
func (c *converter) container(n ast.Node, sep string) string {
	var parts []string
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if s := c.block(ch); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

func (c *converter) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return c.inlineString(n)
	case *ast.Heading:
		inner := c.styledInline(n)
		if strings.TrimSpace(inner) == "" {
			return ""
		}
		return c.strong(inner)
	case *ast.ThematicBreak:
		return "──────────"
	case *ast.FencedCodeBlock:
		return c.codeBlock(c.lines(n), sanitizeLang(string(n.Language(c.src))))
	case *ast.CodeBlock:
		return c.codeBlock(c.lines(n), "")
	case *ast.HTMLBlock:
		raw := c.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(c.src))
		}
		return c.escape(strings.TrimRight(raw, "\n"))
	case *ast.Blockquote:
		return c.blockquote(n)
	case *ast.List:
		return c.list(n)
	case *east.Table:
		return c.table(n)
	}
	if n.Type() == ast.TypeInline {
		return c.inlineString(n.Parent())
	}
	return c.container(n, "\n\n")
}

func (c *converter) lines(n ast.Node) string {
	var b strings.Builder
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		b.Write(seg.Value(c.src))
	}
	return b.String()
}

// sanitizeLang keeps a fence's language only if it is a plausible name.
func sanitizeLang(s string) string {
	if len(s) > 20 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(tokenByte(ch) || ch == '+' || ch == '#' || ch == '.') {
			return ""
		}
	}
	return s
}

func (c *converter) codeBlock(code, lang string) string {
	code = NeutralizeMentions(code)
	if strings.TrimSpace(code) == "" {
		return ""
	}
	if !strings.HasSuffix(code, "\n") {
		code += "\n"
	}
	switch c.d {
	case DialectTelegram:
		esc := EscapeHTML(strings.TrimSuffix(code, "\n"))
		if c.quoted > 0 || c.styled > 0 {
			return esc
		}
		if lang != "" {
			return `<pre><code class="language-` + lang + `">` + esc + "</code></pre>"
		}
		return "<pre>" + esc + "</pre>"
	case DialectSlack:
		return "```\n" + EscapeSlack(breakFences(code)) + "```"
	case DialectDiscord:
		return "```" + lang + "\n" + breakFences(code) + "```"
	default:
		return "```\n" + breakFences(code) + "```"
	}
}

// breakFences stops a ``` inside code from closing the fence around it.
func breakFences(code string) string {
	if !strings.Contains(code, "```") {
		return code
	}
	return strings.ReplaceAll(code, "```", "`"+zwsp+"``")
}

func (c *converter) blockquote(n *ast.Blockquote) string {
	c.quoted++
	inner := c.container(n, "\n\n")
	c.quoted--
	if inner == "" {
		return ""
	}
	if c.d == DialectTelegram {
		if c.quoted > 0 {
			return inner
		}
		return "<blockquote>" + inner + "</blockquote>"
	}
	return prefixLines(inner, "> ", "> ")
}

// prefixLines puts first before the first line and rest before the others.
func prefixLines(s, first, rest string) string {
	var b strings.Builder
	b.Grow(len(s) + len(first) + 8)
	for i, line := range strings.Split(s, "\n") {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteByte('\n')
			if line == "" {
				b.WriteString(strings.TrimRight(rest, " "))
				continue
			}
			b.WriteString(rest)
		}
		b.WriteString(line)
	}
	return b.String()
}

func (c *converter) list(n *ast.List) string {
	sep := "\n"
	if !n.IsTight {
		sep = "\n\n"
	}
	num := n.Start
	var items []string
	for it := n.FirstChild(); it != nil; it = it.NextSibling() {
		var marker string
		switch {
		case n.IsOrdered():
			marker = strconv.Itoa(num) + ". "
			num++
		case c.d == DialectDiscord || c.d == DialectPlain:
			marker = "- "
		default:
			marker = "• "
		}
		inner := c.container(it, sep)
		items = append(items, prefixLines(inner, marker, strings.Repeat(" ", utf8.RuneCountInString(marker))))
	}
	return strings.Join(items, sep)
}

func (c *converter) table(n *east.Table) string {
	var rows [][]string
	var widths []int
	for r := n.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for cell := r.FirstChild(); cell != nil; cell = cell.NextSibling() {
			plain := converter{src: c.src, d: DialectPlain}
			s := strings.ReplaceAll(plain.inlineString(cell), "\n", " ")
			row = append(row, s)
			i := len(row) - 1
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	for ri, row := range rows {
		for i, cell := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)))
			}
		}
		b.WriteByte('\n')
		if ri == 0 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", w))
			}
			b.WriteByte('\n')
		}
	}
	// Table cells were rendered as plain text (already neutralized); only the
	// dialect's escaping is left for codeBlock, which neutralizes idempotently.
	return c.codeBlock(b.String(), "")
}

// inlineString renders n's inline children.
func (c *converter) inlineString(n ast.Node) string {
	var b strings.Builder
	c.inlines(n, &b)
	return strings.TrimRight(b.String(), " \n")
}

func (c *converter) styledInline(n ast.Node) string {
	c.styled++
	defer func() { c.styled-- }()
	return c.inlineString(n)
}

// inlines renders n's inline children. Adjacent text nodes are joined before
// escaping so a mention split across nodes (say by an entity) is still caught.
func (c *converter) inlines(n ast.Node, b *strings.Builder) {
	var pending strings.Builder
	flush := func() {
		if pending.Len() > 0 {
			b.WriteString(c.escape(pending.String()))
			pending.Reset()
		}
	}
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		switch t := ch.(type) {
		case *ast.Text:
			v := t.Value(c.src)
			if !t.IsRaw() {
				v = util.UnescapePunctuations(util.ResolveNumericReferences(util.ResolveEntityNames(v)))
			}
			pending.Write(v)
			if t.HardLineBreak() || t.SoftLineBreak() {
				pending.WriteByte('\n')
			}
		case *ast.String:
			pending.Write(t.Value)
		default:
			flush()
			c.inline(ch, b)
		}
	}
	flush()
}

func (c *converter) inline(n ast.Node, b *strings.Builder) {
	switch n := n.(type) {
	case *ast.CodeSpan:
		var code strings.Builder
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			switch t := ch.(type) {
			case *ast.Text:
				code.Write(t.Value(c.src))
			case *ast.String:
				code.Write(t.Value)
			}
		}
		b.WriteString(c.codeSpan(NeutralizeMentions(code.String())))
	case *ast.Emphasis:
		inner := c.styledInline(n)
		if n.Level >= 2 {
			b.WriteString(c.strong(inner))
		} else {
			b.WriteString(c.wrap(inner, "_", "*", "<i>", "</i>"))
		}
	case *east.Strikethrough:
		b.WriteString(c.wrap(c.styledInline(n), "~", "~~", "<s>", "</s>"))
	case *ast.Link:
		b.WriteString(c.link(string(n.Destination), c.styledInline(n)))
	case *ast.Image:
		b.WriteString(c.link(string(n.Destination), c.styledInline(n)))
	case *ast.AutoLink:
		url := string(n.URL(c.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		b.WriteString(c.link(url, c.escape(string(n.Label(c.src)))))
	case *ast.RawHTML:
		var raw strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(c.src))
		}
		b.WriteString(c.escape(raw.String()))
	default:
		c.inlines(n, b)
	}
}

// escape neutralizes mentions in literal text and escapes it for the dialect.
func (c *converter) escape(s string) string {
	s = NeutralizeMentions(s)
	switch c.d {
	case DialectTelegram:
		return EscapeHTML(NeutralizeUsernames(s))
	case DialectSlack:
		return EscapeSlack(s)
	case DialectDiscord:
		return EscapeDiscord(s)
	}
	return s
}

func (c *converter) strong(inner string) string {
	return c.wrap(inner, "*", "**", "<b>", "</b>")
}

// wrap puts dialect markers around inner, keeping surrounding spaces outside
// the markers (Slack and Discord ignore markers next to a space).
func (c *converter) wrap(inner, slack, discord, tgOpen, tgClose string) string {
	core := strings.TrimSpace(inner)
	if core == "" {
		return inner
	}
	lead := inner[:strings.Index(inner, core)]
	trail := inner[len(lead)+len(core):]
	switch c.d {
	case DialectSlack:
		return lead + slack + core + slack + trail
	case DialectDiscord:
		return lead + discord + core + discord + trail
	case DialectTelegram:
		return lead + tgOpen + core + tgClose + trail
	}
	return inner
}

func (c *converter) codeSpan(code string) string {
	switch c.d {
	case DialectTelegram:
		if c.styled > 0 || c.quoted > 0 {
			return EscapeHTML(code)
		}
		return "<code>" + EscapeHTML(code) + "</code>"
	case DialectSlack:
		return "`" + EscapeSlack(strings.ReplaceAll(code, "`", "ˋ")) + "`"
	case DialectDiscord:
		if strings.Contains(code, "`") {
			return "`` " + strings.ReplaceAll(code, "``", "`"+zwsp+"`") + " ``"
		}
		return "`" + code + "`"
	}
	return "`" + code + "`"
}

// safeURL reports whether a link target may be shown as a link.
func safeURL(u string) bool {
	l := strings.ToLower(u)
	return (strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "mailto:")) &&
		!strings.ContainsAny(u, " \n\t<>")
}

// link renders a link whose text is already in the dialect.
func (c *converter) link(url, label string) string {
	if strings.TrimSpace(label) == "" {
		label = c.escape(url)
	}
	if !safeURL(url) {
		return label
	}
	switch c.d {
	case DialectTelegram:
		return `<a href="` + EscapeHTML(url) + `">` + label + "</a>"
	case DialectSlack:
		u := strings.NewReplacer("|", "%7C", "&", "&amp;").Replace(url)
		if label == EscapeSlack(NeutralizeMentions(url)) {
			return "<" + u + ">"
		}
		return "<" + u + "|" + label + ">"
	case DialectDiscord:
		u := strings.NewReplacer("(", "%28", ")", "%29").Replace(url)
		if label == EscapeDiscord(url) {
			return "<" + u + ">"
		}
		return "[" + strings.NewReplacer("[", "\\[", "]", "\\]").Replace(label) + "](" + u + ")"
	}
	if label == url || "mailto:"+label == url {
		return label
	}
	return label + " (" + url + ")"
}
