package llm

import (
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// benchSchema is a tool schema the size of the lead's ask_clarification, indented as it is
// written in source.
const benchSchema = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "description": "The question to ask the user, in one or two sentences."},
    "fields": {
      "type": "array",
      "description": "Up to 5 inputs. Omit for a free-text answer.",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "A short identifier for the answer, e.g. \"size\"."},
          "label": {"type": "string", "description": "What the field asks, shown to the user."},
          "kind": {"type": "string", "enum": ["choice", "multi_choice", "text", "confirm"]},
          "options": {"type": "array", "items": {"type": "string"}, "description": "The choices."},
          "required": {"type": "boolean"}
        },
        "required": ["id", "label", "kind"],
        "additionalProperties": false
      }
    },
    "allow_free_text": {"type": "boolean", "description": "Whether the user may answer in their own words."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

// benchRequest is a lead call of a chat ten exchanges in: a system prompt, the history, two tools.
func benchRequest() Request {
	req := Request{
		System: []string{strings.Repeat("You are a helpful assistant. ", 20)},
		Tools: []ToolSpec{
			{Name: "ask_clarification", Description: "Ask the user a question.", Parameters: json.RawMessage(benchSchema)},
			{Name: "no_params", Description: "A tool without parameters."},
		},
	}
	for i := range 10 {
		req.Messages = append(req.Messages,
			Message{Role: RoleUser, Content: "m" + strings.Repeat("x", i) + " c12"},
			Message{Role: RoleAssistant, Content: "echo: m" + strings.Repeat("x", i) + " c12"})
	}
	return req
}

// BenchmarkChatRequestWire measures building and encoding the wire request of one call as the
// provider does: its own encoding of the body, plus go-openai's encoding of the stub it is
// handed (and whose bytes capturingDoer then replaces).
func BenchmarkChatRequestWire(b *testing.B) {
	p, err := NewOpenAI(OpenAIOptions{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		c, err := p.prepare(req)
		if err != nil {
			b.Fatal(err)
		}
		c.stub.Stream = true
		if _, err := json.Marshal(c.stub); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatRequestWireGoOpenAI is the same request encoded by go-openai, as the provider
// did before it encoded bodies itself: the figure BenchmarkChatRequestWire is compared with.
func BenchmarkChatRequestWireGoOpenAI(b *testing.B) {
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		creq := goOpenAIRequest(req, DefaultModel)
		if _, err := json.Marshal(creq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeChunk measures decoding one streamed content chunk: the provider's decoder,
// and go-openai's (what Recv does) for comparison.
func BenchmarkDecodeChunk(b *testing.B) {
	line := []byte(chunkLine(`{"content":"The quick"}`, ""))
	b.Run("provider", func(b *testing.B) {
		b.ReportAllocs()
		var c wireChunk
		for b.Loop() {
			if err := decodeChunk(line, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-openai", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c openai.ChatCompletionStreamResponse
			if err := json.Unmarshal(line, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
