package runs

import (
	"strconv"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// Every message's envelope is encoded once by the router and decoded at least once by a worker,
// and encoding/json (reflection, and a Decoder that reads the document twice) was 3–4 % of the
// bot's CPU a message. appendEnvelope writes the bytes json.Marshal writes; decodeEnvelopeFast
// reads the envelopes appendEnvelope writes, and gives up — ok false, DecodeEnvelope then
// decodes with encoding/json, which also says what is wrong — on anything it does not read
// exactly as encoding/json would. FuzzEnvelopeCodec checks both against encoding/json.

// appendEnvelope appends e's JSON, byte for byte what json.Marshal(e) returns; the error is
// json.Marshal's (a created_at outside years 0–9999).
func appendEnvelope(b []byte, e *Envelope) ([]byte, error) {
	b = append(b, `{"run_id":`...)
	b = jsonwire.AppendQuote(b, e.RunID)
	b = append(b, `,"kind":`...)
	b = jsonwire.AppendQuote(b, string(e.Kind))
	b = appendConv(append(b, `,"conv":`...), e.Conv)
	b = append(b, `,"identity":{"platform":`...)
	b = jsonwire.AppendQuote(b, e.Identity.Platform)
	b = append(b, `,"channel_user_id":`...)
	b = jsonwire.AppendQuote(b, e.Identity.ChannelUserID)
	b = appendOmitEmpty(b, `,"display_name":`, e.Identity.DisplayName)
	if e.Identity.Admin {
		b = append(b, `,"admin":true`...)
	}
	b = append(b, '}')
	b = appendOmitEmpty(b, `,"text":`, e.Text)
	if len(e.Attachments) > 0 {
		b = append(b, `,"attachments":[`...)
		for i, a := range e.Attachments {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonwire.AppendQuote(b, a.Name)
			b = appendOmitEmpty(b, `,"mime":`, a.MIME)
			if a.Size != 0 {
				b = append(b, `,"size":`...)
				b = strconv.AppendInt(b, a.Size, 10)
			}
			b = appendOmitEmpty(b, `,"url":`, a.URL)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendOmitEmpty(b, `,"reply_to":`, e.ReplyTo)
	b = appendOmitEmpty(b, `,"command":`, e.Command)
	if len(e.Args) > 0 {
		b = append(b, `,"args":[`...)
		for i, a := range e.Args {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwire.AppendQuote(b, a)
		}
		b = append(b, ']')
	}
	b = appendOmitEmpty(b, `,"clarification_id":`, e.ClarificationID)
	b = append(b, `,"created_at":"`...)
	b, err := e.CreatedAt.AppendText(b) // what time.Time's MarshalJSON writes, unquoted
	if err != nil {
		return nil, err
	}
	b = append(b, '"')
	b = appendOmitZero(b, `,"attempt":`, e.Attempt)
	if e.Sig != nil {
		b = append(b, `,"sig":{"kid":`...)
		b = jsonwire.AppendQuote(b, e.Sig.KeyID)
		b = append(b, `,"mac":`...)
		b = jsonwire.AppendQuote(b, e.Sig.MAC)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendConv appends k's JSON as json.Marshal writes it.
func appendConv(b []byte, k conv.Key) []byte {
	b = append(b, `{"platform":`...)
	b = jsonwire.AppendQuote(b, k.Platform)
	b = appendOmitEmpty(b, `,"workspace":`, k.Workspace)
	b = append(b, `,"chat":`...)
	b = jsonwire.AppendQuote(b, k.Chat)
	b = appendOmitEmpty(b, `,"thread":`, k.Thread)
	return append(b, '}')
}

// appendOmitEmpty appends key and s's JSON unless s is empty (omitempty).
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonwire.AppendQuote(append(b, key...), s)
}

var (
	envelopeKeys   = jsonwire.Keys{Strict: true, Names: []string{"run_id", "kind", "conv", "identity", "text", "attachments", "reply_to", "command", "args", "clarification_id", "created_at", "attempt", "sig"}}
	convKeys       = jsonwire.Keys{Strict: true, Names: []string{"platform", "workspace", "chat", "thread"}}
	identityKeys   = jsonwire.Keys{Strict: true, Names: []string{"platform", "channel_user_id", "display_name", "admin"}}
	attachmentKeys = jsonwire.Keys{Strict: true, Names: []string{"name", "mime", "size", "url"}}
	signatureKeys  = jsonwire.Keys{Strict: true, Names: []string{"kid", "mac"}}
)

// decodeEnvelopeFast reads b into e as a json.Decoder with DisallowUnknownFields would, when
// it can; ok false means it gave up and b is to be decoded the slow way. It does not validate.
func decodeEnvelopeFast(b []byte, e *Envelope) (ok bool) {
	r := jsonwire.NewReader(b)
	r.Object(&envelopeKeys, func(k int) {
		switch k {
		case 0:
			e.RunID = r.Str()
		case 1:
			e.Kind = Kind(r.Str())
		case 2:
			r.Object(&convKeys, func(k int) { *convField(&e.Conv, k) = r.Str() })
		case 3:
			r.Object(&identityKeys, func(k int) {
				switch k {
				case 0:
					e.Identity.Platform = r.Str()
				case 1:
					e.Identity.ChannelUserID = r.Str()
				case 2:
					e.Identity.DisplayName = r.Str()
				case 3:
					e.Identity.Admin = r.Bool()
				}
			})
		case 4:
			e.Text = r.Str()
		case 5:
			e.Attachments = []conv.Attachment{}
			r.Array(func() {
				var a conv.Attachment
				r.Object(&attachmentKeys, func(k int) {
					switch k {
					case 0:
						a.Name = r.Str()
					case 1:
						a.MIME = r.Str()
					case 2:
						a.Size = int64(r.Int())
					case 3:
						a.URL = r.Str()
					}
				})
				e.Attachments = append(e.Attachments, a)
			})
		case 6:
			e.ReplyTo = r.Str()
		case 7:
			e.Command = r.Str()
		case 8:
			e.Args = []string{}
			r.Array(func() { e.Args = append(e.Args, r.Str()) })
		case 9:
			e.ClarificationID = r.Str()
		case 10:
			// time.Time reads the string's bytes as they stand, escapes and all.
			if r.Peek() != '"' || e.CreatedAt.UnmarshalJSON(r.Raw()) != nil {
				r.Fail()
			}
		case 11:
			e.Attempt = r.Int()
		case 12:
			e.Sig = &Signature{}
			r.Object(&signatureKeys, func(k int) {
				if k == 0 {
					e.Sig.KeyID = r.Str()
				} else {
					e.Sig.MAC = r.Str()
				}
			})
		}
	})
	return r.End()
}

// convField is the field of k that convKeys names at index i.
func convField(k *conv.Key, i int) *string {
	switch i {
	case 0:
		return &k.Platform
	case 1:
		return &k.Workspace
	case 2:
		return &k.Chat
	}
	return &k.Thread
}
