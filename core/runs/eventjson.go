package runs

import (
	"encoding/json"
	"strconv"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// EncodeEvent returns json.Marshal(ev)'s bytes: how a run's closing event is recorded, once per
// run, for a redelivery to emit again. The common event — no subagent, no form — is written by
// hand (encoding/json's reflection was about 1 % of the bot's CPU a message); any other goes
// through json.Marshal.
func EncodeEvent(ev Event) ([]byte, error) {
	if ev.Subagent != nil || ev.Form != nil {
		return json.Marshal(ev)
	}
	b := make([]byte, 0, 192+len(ev.Text)+len(ev.Reason))
	b = append(b, `{"run_id":`...)
	b = jsonwire.AppendQuote(b, ev.RunID)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(ev.Step), 10)
	b = appendConv(append(b, `,"conv":`...), ev.Conv)
	b = append(b, `,"kind":`...)
	b = jsonwire.AppendQuote(b, string(ev.Kind))
	b = appendOmitEmpty(b, `,"text":`, ev.Text)
	b = appendOmitEmpty(b, `,"tool":`, ev.Tool)
	b = appendOmitEmpty(b, `,"reason":`, ev.Reason)
	b = append(b, `,"at":"`...)
	b, err := ev.At.AppendText(b) // what time.Time's MarshalJSON writes, unquoted
	if err != nil {
		return json.Marshal(ev) // for json.Marshal's own error
	}
	b = append(b, '"')
	b = appendOmitZero(b, `,"attempt":`, ev.Attempt)
	b = appendOmitEmpty(b, `,"reply_to":`, ev.ReplyTo)
	b = appendOmitEmpty(b, `,"user":`, ev.User)
	b = appendOmitZero(b, `,"part":`, ev.Part)
	return append(b, '}'), nil
}

// appendOmitZero appends key and n unless n is 0 (omitempty).
func appendOmitZero(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}
