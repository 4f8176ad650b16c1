package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-bot/switchboard/core/agent"
)

// resultText is what the model reads of a result: each content item in order (text as it is;
// images, audio and binary resources described, never dropped silently), then the structured
// content as JSON when no text item already carries it.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	texts := map[string]bool{}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			texts[strings.TrimSpace(c.Text)] = true
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image (%s, %d bytes) the model cannot see]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[an audio clip (%s, %d bytes) the model cannot hear]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[a resource link: %s %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			parts = append(parts, describeResource(c.Resource))
		case nil:
		default:
			parts = append(parts, fmt.Sprintf("[content of type %T the bot does not read]", c))
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && !texts[string(b)] {
			var indented bytes.Buffer
			if json.Indent(&indented, b, "", "  ") != nil || !texts[indented.String()] {
				parts = append(parts, "Structured result: "+string(b))
			}
		}
	}
	if len(parts) == 0 {
		return "(the tool returned no content)"
	}
	return strings.Join(parts, "\n")
}

func describeResource(r *mcp.ResourceContents) string {
	if r == nil {
		return "[an empty embedded resource]"
	}
	if r.Text != "" || len(r.Blob) == 0 {
		return fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, orUnknown(r.MIMEType), r.Text)
	}
	return fmt.Sprintf("[a binary resource %s (%s, %d bytes) the model cannot read]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
}

func orUnknown(s string) string {
	if s == "" {
		return "type unknown"
	}
	return s
}

// toResult turns a call's result into what the agent records, cut to max bytes.
func toResult(res *mcp.CallToolResult, max int) agent.ToolResult {
	text := cut(resultText(res), max)
	if res.IsError {
		return agent.ToolResult{Content: "Error: " + text, IsError: true, Code: agent.CodeFailed}
	}
	return agent.ToolResult{Content: text}
}

// cut shortens s to at most max bytes on a character boundary, with a note saying so.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return cutUTF8(s, max) + fmt.Sprintf("\n[cut: the result was %d bytes; the first %d are shown]", len(s), max)
}

// cutUTF8 is the longest prefix of s of at most n bytes that ends on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func readAllClose(rc io.ReadCloser) ([]byte, error) {
	defer rc.Close()
	return io.ReadAll(rc)
}
