package agent

import (
	"strconv"

	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// AppendEvent appends the JSON of e to dst: exactly the bytes json.Marshal(e) returns (the same
// keys in the same order, the same omissions, the same escapes), written by hand. It exists for
// saving histories, which every answered run does.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	dst = append(dst, `,"kind":`...)
	dst = jsonwire.AppendQuote(dst, string(e.Kind))
	dst = appendIntField(dst, `,"turn":`, e.Turn)
	dst = appendIntField(dst, `,"step":`, e.Step)
	dst = appendStringField(dst, `,"trigger":`, e.Trigger)
	dst = appendStringField(dst, `,"source":`, e.Source)
	dst = appendStringField(dst, `,"content":`, e.Content)
	dst = appendStringField(dst, `,"reasoning":`, e.Reasoning)
	if e.Usage != (llm.Usage{}) {
		dst = append(dst, `,"usage":{"prompt_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.PromptTokens), 10)
		dst = append(dst, `,"completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.CompletionTokens), 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.TotalTokens), 10)
		dst = append(dst, '}')
	}
	dst = appendStringField(dst, `,"call_id":`, e.CallID)
	dst = appendStringField(dst, `,"tool":`, e.Tool)
	dst = appendStringField(dst, `,"arguments":`, e.Arguments)
	if e.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	dst = appendStringField(dst, `,"code":`, string(e.Code))
	dst = appendStringField(dst, `,"reason":`, string(e.Reason))
	dst = appendStringField(dst, `,"error":`, e.Error)
	return append(dst, '}')
}

// appendIntField appends an omitempty int field: nothing when v is 0.
func appendIntField(dst []byte, key string, v int) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(v), 10)
}

// appendStringField appends an omitempty string field: nothing when v is empty.
func appendStringField(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return jsonwire.AppendQuote(append(dst, key...), v)
}
