package render

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinChunkLimit is the smallest limit Chunk honours; smaller limits are raised
// to it so that reopened fences and tags always leave room for text.
const MinChunkLimit = 64

// Chunk splits text that is already in dialect d into pieces of at most limit
// characters, for platforms that cap a message or block. Characters are
// counted as the platform counts them (VisibleWidth): for Telegram HTML what
// the user sees — tags count nothing, an entity one character — since
// Telegram's limit applies after its entities are parsed; for the others the
// text as written (Width). It prefers to cut outside a code block or
// formatting (a ``` fence, a Telegram tag) at a blank line or line end, then
// at a blank line, a line end, then after a space, and never cuts inside a
// rune, an HTML entity or tag, or a Slack <link|label>. A cut inside a ```
// code block closes the fence and reopens it (with its language) in the next
// piece; for Telegram HTML, tags open at a cut are closed and reopened, so
// every piece is well-formed on its own (an unbalanced input is balanced
// too). Pieces carry no leading or trailing blank lines; empty input gives no
// pieces.
func Chunk(text string, limit int, d Dialect) []string {
	limit = max(limit, MinChunkLimit)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if d != DialectTelegram && Width(text) <= limit && !strings.Contains(text, "```") {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		return []string{strings.Trim(text, "\n")}
	}
	if d == DialectTelegram && len(text) <= limit && wholeTelegram(text) {
		// As the chunker's one piece: leading blank lines and trailing white space cut, and
		// nothing for text that shows nothing.
		piece := strings.TrimRight(strings.TrimLeft(text, "\n"), " \t\n")
		if (&chunker{d: d}).blank(piece) {
			return nil
		}
		return []string{piece}
	}
	return chunkAll(text, limit, d)
}

// chunkAll is Chunk's walk over text, piece by piece.
func chunkAll(text string, limit int, d Dialect) []string {
	c := chunker{text: text, limit: limit, d: d}
	var out []string
	for c.pos < len(text) {
		if piece := c.next(); piece != "" {
			out = append(out, piece)
		}
	}
	return out
}

// wholeTelegram reports whether Telegram HTML text that fits a piece byte for byte is the
// piece as it stands: every '<' opens a tag the chunker reads as one (a name, no newline or
// '<' inside), no tag closes itself, and each close tag closes the innermost open one, so that
// the chunker would have nothing to escape, drop, close or reopen. Most answers are such a
// text, and the chunker's walk over it was 2–3 % of the bot's CPU a message on Telegram.
// FuzzChunkWhole checks it against the chunker.
func wholeTelegram(text string) bool {
	var open [16]string
	depth := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '<' {
			continue
		}
		j := strings.IndexByte(text[i+1:], '>')
		if j < 1 || strings.ContainsAny(text[i+1:i+1+j], "<\n") {
			return false
		}
		inner := text[i+1 : i+1+j]
		i += j + 1
		if strings.HasSuffix(inner, "/") {
			return false
		}
		if strings.HasPrefix(inner, "/") {
			if depth == 0 || inner[1:] != open[depth-1] { // the chunker writes a close tag as </name>
				return false
			}
			depth--
			continue
		}
		name := tagName(inner)
		if name == "" || depth == len(open) || name != inner[:len(name)] {
			return false
		}
		open[depth] = name
		depth++
	}
	return depth == 0
}

// VisibleWidth is how many characters text in dialect d counts for the
// platform's length limits: for Telegram HTML the characters shown (tags
// count nothing, an entity counts as the character it stands for), in UTF-16
// code units like Width; for every other dialect Width of the text as written.
func VisibleWidth(text string, d Dialect) int {
	if d != DialectTelegram {
		return Width(text)
	}
	n := 0
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			if j := strings.IndexByte(text[i:], '>'); j > 0 && !strings.ContainsAny(text[i+1:i+j], "<\n") {
				i += j + 1
				continue
			}
		case '&':
			if j := strings.IndexByte(text[i:min(len(text), i+12)], ';'); j > 1 {
				n += Width(html.UnescapeString(text[i : i+j+1]))
				i += j + 1
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		n += runeWidth(r)
		i += size
	}
	return n
}

type openTag struct {
	name    string
	raw     string
	dropped bool // too long to ever emit; its close tag is skipped too
	emitted bool // emitted in the piece being built
}

// chunkState is what a cut must close and the next piece must reopen.
type chunkState struct {
	inFence   bool
	fenceOpen string
	stack     []openTag
}

func (s chunkState) clone() chunkState {
	s.stack = append([]openTag(nil), s.stack...)
	return s
}

type chunker struct {
	text  string
	limit int
	d     Dialect
	pos   int
	st    chunkState
}

func (c *chunker) markup() bool { return c.d == DialectTelegram }

// reopen returns the prefix that restores st at the start of a piece and marks
// which open tags it emits.
func (c *chunker) reopen(st *chunkState) string {
	if c.markup() {
		// Tags are not counted against the limit (Telegram counts what is shown), so every
		// open tag is reopened.
		var b strings.Builder
		for i := range st.stack {
			t := &st.stack[i]
			t.emitted = !t.dropped
			if t.emitted {
				b.WriteString(t.raw)
			}
		}
		return b.String()
	}
	if st.inFence {
		if Width(st.fenceOpen)+5 > c.limit/4 {
			return "```\n"
		}
		return st.fenceOpen + "\n"
	}
	return ""
}

// closeCost is the width of what must be appended to end a piece in state st
// (close tags count nothing).
func (c *chunker) closeCost(st *chunkState) int {
	if c.markup() {
		return 0
	}
	if st.inFence {
		return 4 // "\n```"
	}
	return 0
}

func (c *chunker) closers(st *chunkState, body string) string {
	if c.markup() {
		var b strings.Builder
		for i := len(st.stack) - 1; i >= 0; i-- {
			if st.stack[i].emitted {
				b.WriteString("</" + st.stack[i].name + ">")
			}
		}
		return b.String()
	}
	if st.inFence {
		if strings.HasSuffix(body, "\n") {
			return "```"
		}
		return "\n```"
	}
	return ""
}

// atomEnd returns the end of the indivisible unit starting at i.
func (c *chunker) atomEnd(i int) int {
	s := c.text
	switch s[i] {
	case '<':
		if c.d == DialectTelegram || c.d == DialectSlack {
			// A Telegram tag is never split (stepTag drops one too long to
			// emit); a Slack link too long for half a piece may be.
			maxLen := len(s) - i
			if c.d == DialectSlack {
				maxLen = min(maxLen, c.limit/2)
			}
			if j := strings.IndexByte(s[i+1:min(len(s), i+maxLen)], '>'); j >= 0 &&
				!strings.ContainsAny(s[i+1:i+1+j], "<\n") {
				return i + j + 2
			}
		}
	case '&':
		if c.d == DialectTelegram || c.d == DialectSlack {
			for j := i + 1; j < len(s) && j < i+12; j++ {
				ch := s[j]
				if ch == ';' && j > i+1 {
					return j + 1
				}
				if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '#') {
					break
				}
			}
		}
	case '\\':
		// A Discord escape and what it escapes stay together: cut between them, one piece
		// would end in a stray backslash and the next start with live markdown.
		if c.d == DialectDiscord && i+1 < len(s) {
			_, n := utf8.DecodeRuneInString(s[i+1:])
			return i + 1 + n
		}
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// step applies the atom text[i:j] to st and returns what the piece should
// contain for it (tags that are dropped or unmatched contribute nothing).
func (c *chunker) step(st *chunkState, i, j int) string {
	atom := c.text[i:j]
	if c.markup() {
		if len(atom) > 2 && atom[0] == '<' && atom[len(atom)-1] == '>' {
			return c.stepTag(st, atom)
		}
		return atom
	}
	// Code fences toggle at the start of a line.
	if (i == 0 || c.text[i-1] == '\n') && strings.HasPrefix(c.text[i:], "```") {
		if st.inFence {
			st.inFence = false
		} else {
			end := strings.IndexByte(c.text[i:], '\n')
			if end < 0 {
				end = len(c.text) - i
			}
			st.inFence, st.fenceOpen = true, strings.TrimRight(c.text[i:i+end], " \r")
		}
	}
	return atom
}

func (c *chunker) stepTag(st *chunkState, atom string) string {
	inner := atom[1 : len(atom)-1]
	if strings.HasPrefix(inner, "/") {
		name := tagName(inner[1:])
		for k := len(st.stack) - 1; k >= 0; k-- {
			if st.stack[k].name != name {
				continue
			}
			var b strings.Builder
			for m := len(st.stack) - 1; m >= k; m-- {
				if st.stack[m].emitted {
					b.WriteString("</" + st.stack[m].name + ">")
				}
			}
			st.stack = st.stack[:k]
			return b.String()
		}
		return "" // a close tag with nothing to close
	}
	if strings.HasSuffix(inner, "/") {
		return atom
	}
	name := tagName(inner)
	if name == "" {
		return EscapeHTML(atom)
	}
	t := openTag{name: name, raw: atom}
	// A tag costs nothing visible, but one longer than a whole piece (a giant link) is
	// dropped rather than repeated in every piece.
	t.dropped = len(atom) > c.limit
	t.emitted = !t.dropped
	st.stack = append(st.stack, t)
	if t.dropped {
		return ""
	}
	return atom
}

func tagName(s string) string {
	end := 0
	for end < len(s) {
		ch := s[end]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-') {
			break
		}
		end++
	}
	return strings.ToLower(s[:end])
}

// next builds one piece starting at c.pos and advances past it.
func (c *chunker) next() string {
	// Leading blank lines carry nothing outside a code block.
	if !c.st.inFence && len(c.st.stack) == 0 {
		for c.pos < len(c.text) && c.text[c.pos] == '\n' {
			c.pos++
		}
		if c.pos == len(c.text) {
			return ""
		}
	}
	trial := c.st.clone()
	prefix := c.reopen(&trial)
	base := VisibleWidth(prefix, c.d)
	// Scan forward recording the last cut of each kind that fits, and the last line or
	// paragraph end outside any code block or formatting.
	var cutAny, cutSpace, cutLine, cutPara, cutOutside int
	used := 0
	i := c.pos
	for i < len(c.text) {
		if i-c.pos > 16*c.limit+4096 {
			// Atoms that emit nothing (dropped or stray tags) could keep the
			// scan going; bound it so each piece costs O(limit).
			break
		}
		j := c.atomEnd(i)
		out := c.step(&trial, i, j)
		used += VisibleWidth(out, c.d)
		if base+used > c.limit {
			break
		}
		if base+used+c.closeCost(&trial) <= c.limit {
			cutAny = j
			switch c.text[j-1] {
			case ' ', '\t':
				cutSpace = j
			case '\n':
				cutLine = j
				if j >= 2 && c.text[j-2] == '\n' {
					cutPara = j
				}
				if !trial.inFence && len(trial.stack) == 0 {
					cutOutside = j
				}
			}
		}
		i = j
	}
	end := len(c.text)
	if i < len(c.text) || base+used+c.closeCost(&trial) > c.limit {
		end = c.pickCut(cutAny, cutSpace, cutLine, cutPara, cutOutside, trial.inFence || len(trial.stack) > 0)
	}
	// Replay the chosen span on the real state to build the piece.
	st := c.st.clone()
	prefix = c.reopen(&st)
	var b strings.Builder
	b.WriteString(prefix)
	for k := c.pos; k < end; {
		j := c.atomEnd(k)
		b.WriteString(c.step(&st, k, j))
		k = j
	}
	content := b.String()[len(prefix):]
	if !st.inFence && len(st.stack) == 0 {
		content = strings.TrimRight(content, " \t\n")
	}
	piece := prefix + content
	piece += c.closers(&st, piece)
	for k := range st.stack {
		st.stack[k].emitted = false
	}
	c.st, c.pos = st, end
	if c.blank(content) {
		return ""
	}
	return piece
}

// blank reports whether content shows nothing (only whitespace and tags).
func (c *chunker) blank(content string) bool {
	if !c.markup() {
		return strings.TrimSpace(content) == ""
	}
	inTag := false
	for _, r := range content {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
		case !inTag && !unicode.IsSpace(r):
			return false
		}
	}
	return true
}

// pickCut prefers, when the longest cut that fits would land inside a code
// block or formatting (inside), the last line end outside any, so the block
// starts the next piece whole, as long as the piece keeps a quarter of the
// room; then a paragraph, a line, a word boundary, as long as the piece stays
// at least half as long as the longest cut that fits.
func (c *chunker) pickCut(any, space, line, para, outside int, inside bool) int {
	if any <= c.pos {
		// Nothing fits beside the reopened state: take one atom regardless.
		return c.atomEnd(c.pos)
	}
	if inside && outside > c.pos+(any-c.pos)/4 {
		return outside
	}
	half := c.pos + (any-c.pos)/2
	for _, cut := range []int{para, line, space} {
		if cut > half {
			return cut
		}
	}
	return any
}
