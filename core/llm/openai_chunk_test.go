package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// fastDecode runs only chunkDecoder, reporting whether it decoded data itself.
func fastDecode(data []byte) (wireChunk, bool) {
	var c wireChunk
	d := chunkDecoder{data: data}
	ok := d.chunk(&c) && d.end()
	return c, ok
}

// checkChunk fails t unless decodeChunk gives what json.Unmarshal gives for data, and reports
// whether chunkDecoder decoded it without encoding/json. Whenever chunkDecoder decodes an
// input itself, encoding/json must accept it and agree.
func checkChunk(t *testing.T, data string) (fast bool) {
	t.Helper()
	var want wireChunk
	wantErr := json.Unmarshal([]byte(data), &want)

	got, fast := fastDecode([]byte(data))
	if fast && (wantErr != nil || !reflect.DeepEqual(got, want)) {
		t.Fatalf("chunkDecoder decoded %q as %+v; encoding/json: %+v, %v", data, got, want, wantErr)
	}

	// Through decodeChunk, over a chunk left from an earlier call.
	prev := wireChunk{Choices: []wireChoice{{Index: 3, Delta: wireDelta{Content: "stale"}}}, Usage: &Usage{TotalTokens: 9}}
	err := decodeChunk([]byte(data), &prev)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeChunk(%q) err = %v, encoding/json err = %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(prev, want) {
		t.Fatalf("decodeChunk(%q) = %+v, want %+v", data, prev, want)
	}
	return fast
}

// chunkLine is a chunk as the fake server and the real APIs send it.
func chunkLine(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat",` +
		`"system_fingerprint":"fp_1","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
}

func TestDecodeChunkReadsUsualChunksItself(t *testing.T) {
	tests := map[string]string{
		"role":             chunkLine(`{"role":"assistant","content":""}`, ""),
		"content":          chunkLine(`{"content":"The quick"}`, ""),
		"escapes":          chunkLine(`{"content":"line\none \"q\" \\ \/ \t\b\f\r \u00e9 \ud83e\udd8a \u2028"}`, ""),
		"utf-8":            chunkLine(`{"content":"ünïcödé 日本語 🦊"}`, ""),
		"invalid utf-8":    chunkLine("{\"content\":\"bad \xff\xfe \xe2\x82 end\"}", ""),
		"lone surrogates":  chunkLine(`{"content":"\ud83e x \udd8a \ud83e\u0041"}`, ""),
		"reasoning":        chunkLine(`{"reasoning_content":"Let me think","content":null}`, ""),
		"refusal":          chunkLine(`{"refusal":"no"}`, ""),
		"finish":           chunkLine(`{}`, "stop"),
		"null delta":       chunkLine(`null`, "length"),
		"tool call start":  chunkLine(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		"tool call piece":  chunkLine(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
		"tool call no idx": chunkLine(`{"tool_calls":[{"id":"c","function":{"name":"x"}}]}`, ""),
		"tool call null":   chunkLine(`{"tool_calls":[{"index":null,"function":null},null]}`, ""),
		"empty tool calls": chunkLine(`{"tool_calls":[]}`, ""),
		"null tool calls":  chunkLine(`{"tool_calls":null}`, ""),
		"negative index":   chunkLine(`{"tool_calls":[{"index":-0},{"index":-7}]}`, ""),
		"usage":            `{"id":"x","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0}}}`,
		"usage null":       `{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}`,
		"choices null":     `{"choices":null}`,
		"null choice":      `{"choices":[null]}`,
		"two choices":      `{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
		"empty object":     `{}`,
		"white space":      " \t\r\n{ \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\" } } ] } \n",
		"unknown values":   `{"a":[1,-2.5e+3,0.1,1E9,true,false,null,"s\u0041\n",{"b":{"c":[]}}],"choices":[{"content_filter_results":{"hate":{"filtered":false}},"index":0}]}`,
		"max int":          `{"choices":[{"index":999999999999999999}]}`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if !checkChunk(t, data) {
				t.Fatalf("left %q to encoding/json", data)
			}
		})
	}
}

func TestDecodeChunkLeavesUnusualChunksToEncodingJSON(t *testing.T) {
	tests := map[string]string{
		"duplicate choices":      `{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"delta":{"refusal":"b"}}]}`,
		"duplicate content":      chunkLine(`{"content":"a","content":"b"}`, ""),
		"duplicate usage":        `{"usage":{"prompt_tokens":1},"usage":{"total_tokens":2}}`,
		"case-folded key":        `{"Choices":[{"Index":0,"DELTA":{"Content":"a"}}]}`,
		"escaped known key":      `{"ch\u006fices":[{"index":0,"delta":{"content":"a"}}]}`,
		"escaped unknown key":    `{"ke\"y":2,"choices":[]}`,
		"non-ASCII folding key":  `{"choiceſ":[{"index":0,"delta":{"content":"a"}}]}`,
		"float index":            `{"choices":[{"index":1.0}]}`,
		"exponent index":         `{"choices":[{"index":1e0}]}`,
		"huge index":             `{"choices":[{"index":99999999999999999999}]}`,
		"string index":           `{"choices":[{"index":"0"}]}`,
		"number content":         chunkLine(`{"content":5}`, ""),
		"object choices":         `{"choices":{"index":0}}`,
		"array delta":            chunkLine(`[]`, ""),
		"top-level null":         `null`,
		"deep unknown":           `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"choices":[]}`,
		"tool index bool":        chunkLine(`{"tool_calls":[{"index":true}]}`, ""),
		"usage string":           `{"usage":"none"}`,
		"bool content":           chunkLine(`{"content":false}`, ""),
		"escaped apostrophe key": `{"a\'":1}`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if checkChunk(t, data) {
				t.Fatalf("chunkDecoder decoded %q itself", data)
			}
		})
	}
}

func TestDecodeChunkRefusesMalformedInput(t *testing.T) {
	valid := chunkLine(`{"content":"hello","tool_calls":[{"index":0,"id":"c","function":{"name":"n","arguments":"{}"}}]}`, "stop")
	tests := map[string]string{
		"empty":                    ``,
		"white space only":         ` `,
		"not json":                 `data: {"choices":[]}`,
		"cut in a key":             `{"choi`,
		"cut after colon":          `{"choices":`,
		"cut in a string":          chunkLine(`{"content":"hel`, ""),
		"cut in an escape":         `{"choices":[{"delta":{"content":"a\`,
		"cut in a unicode escape":  `{"choices":[{"delta":{"content":"\u00"}}]}`,
		"bad escape":               chunkLine(`{"content":"\x41"}`, ""),
		"apostrophe escape":        chunkLine(`{"content":"\'"}`, ""),
		"raw newline in string":    chunkLine("{\"content\":\"a\nb\"}", ""),
		"control byte in unknown":  "{\"id\":\"a\x01\",\"choices\":[]}",
		"trailing comma":           `{"choices":[],}`,
		"trailing comma in array":  `{"choices":[{"index":0},]}`,
		"missing comma":            `{"choices":[] "usage":null}`,
		"missing colon":            `{"choices" []}`,
		"single quotes":            `{'choices':[]}`,
		"trailing data":            `{"choices":[]} {}`,
		"trailing garbage":         `{"choices":[]}x`,
		"leading zero":             `{"choices":[{"index":01}]}`,
		"lone minus":               `{"choices":[{"index":-}]}`,
		"bad unknown number":       `{"x":1.,"choices":[]}`,
		"bad unknown exponent":     `{"x":1e,"choices":[]}`,
		"plus number":              `{"x":+1}`,
		"bare word":                `{"x":nul}`,
		"True":                     `{"x":True}`,
		"unclosed object":          `{"choices":[]`,
		"unclosed unknown":         `{"x":{"y":1}`,
		"unknown key unquoted":     `{x:1}`,
		"number key":               `{1:1}`,
		"nested cut":               valid[:len(valid)/2],
		"closing bracket mismatch": `{"choices":[}`,
		"integer then garbage":     `{"choices":[{"index":12a}]}`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			var c wireChunk
			if err := decodeChunk([]byte(data), &c); err == nil {
				t.Fatalf("decodeChunk(%q) accepted it: %+v", data, c)
			}
			checkChunk(t, data)
		})
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, s := range []string{
		chunkLine(`{"role":"assistant","content":""}`, ""),
		chunkLine(`{"content":"a\n\u00e9\ud83e\udd8a"}`, "stop"),
		chunkLine(`{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"n","arguments":"{\"a\":1}"}}]}`, ""),
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"x":[1,-2.5e+3,true,null,{"y":"z"}],"Choices":null}`,
		"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}",
		`{"choices":[{"index":1.5}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunk(t, string(data))
	})
}

// TestDecodeChunkReadsWhatGoOpenAIReads checks the fields the accumulator uses against
// go-openai's own chunk type, which the provider decoded into before.
func TestDecodeChunkReadsWhatGoOpenAIReads(t *testing.T) {
	for i, line := range []string{
		chunkLine(`{"content":"x","reasoning_content":"r","refusal":"n"}`, "stop"),
		chunkLine(`{"tool_calls":[{"index":2,"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]}`, "tool_calls"),
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var ours wireChunk
			if err := decodeChunk([]byte(line), &ours); err != nil {
				t.Fatal(err)
			}
			var theirs openai.ChatCompletionStreamResponse
			if err := json.Unmarshal([]byte(line), &theirs); err != nil {
				t.Fatal(err)
			}
			if len(ours.Choices) != len(theirs.Choices) {
				t.Fatalf("choices %d, go-openai %d", len(ours.Choices), len(theirs.Choices))
			}
			for j, c := range theirs.Choices {
				o := ours.Choices[j]
				d := c.Delta
				if o.Index != c.Index || o.FinishReason != c.FinishReason || o.Delta.Content != d.Content ||
					o.Delta.Refusal != d.Refusal || o.Delta.ReasoningContent != d.ReasoningContent ||
					!reflect.DeepEqual(o.Delta.ToolCalls, d.ToolCalls) {
					t.Fatalf("choice %+v, go-openai %+v", o, c)
				}
			}
			if (ours.Usage == nil) != (theirs.Usage == nil) || (ours.Usage != nil && (ours.Usage.PromptTokens != theirs.Usage.PromptTokens ||
				ours.Usage.CompletionTokens != theirs.Usage.CompletionTokens || ours.Usage.TotalTokens != theirs.Usage.TotalTokens)) {
				t.Fatalf("usage %+v, go-openai %+v", ours.Usage, theirs.Usage)
			}
		})
	}
}
