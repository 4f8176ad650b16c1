package render

import (
	"strings"
)

// splitBlocks splits text in Discord's markdown dialect into pieces of at most limit characters
// (Width), like Chunk, except that a fenced code block that fits in one piece is never cut: when
// it does not fit beside the text before it, it starts the next piece whole. Text between
// blocks, and a block longer than a piece, are cut by Chunk (which prefers paragraph and line
// ends, and closes and reopens a fence it cuts). Joined, the pieces are text but for white
// space at the cuts and the fence lines closing and reopening a cut block: nothing is dropped.
// Empty or blank text gives no pieces.
func splitBlocks(text string, limit int) []string {
	limit = max(limit, MinChunkLimit)
	text = strings.ToValidUTF8(text, "\uFFFD")
	if Width(text) <= limit || !strings.Contains(text, "```") {
		return Chunk(text, limit, DialectDiscord)
	}
	var out []string
	piece := ""
	for _, seg := range fenceSegments(text) {
		joined := seg.text
		if piece != "" {
			joined = piece + "\n" + seg.text
		}
		if Width(joined) <= limit {
			piece = joined
			continue
		}
		if seg.block && Width(seg.text) <= limit {
			out = append(out, Chunk(piece, limit, DialectDiscord)...)
			piece = seg.text
			continue
		}
		parts := Chunk(joined, limit, DialectDiscord)
		if len(parts) == 0 {
			piece = ""
			continue
		}
		out = append(out, parts[:len(parts)-1]...)
		piece = parts[len(parts)-1]
	}
	return append(out, Chunk(piece, limit, DialectDiscord)...)
}

// segment is a run of whole lines of text: a fenced code block (its fence lines included) or
// the text between blocks.
type segment struct {
	text  string
	block bool
}

// fenceSegments cuts text into segments at its code fences, as Chunk reads them: a line that
// starts with ``` opens a block, and the next such line closes it; a block left open runs to
// the end. Joined by "\n", the segments are text.
func fenceSegments(text string) []segment {
	var segs []segment
	start, inFence := 0, false
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += i
		}
		if strings.HasPrefix(text[i:], "```") {
			if inFence {
				segs = append(segs, segment{text: text[start:end], block: true})
				start = end + 1
			} else {
				if i > start {
					segs = append(segs, segment{text: text[start : i-1]})
				}
				start = i
			}
			inFence = !inFence
		}
		i = end + 1
	}
	if start < len(text) {
		segs = append(segs, segment{text: text[start:], block: inFence})
	}
	return segs
}
