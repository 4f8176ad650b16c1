package discordfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// messageBody is a create or edit message request.
type messageBody struct {
	Content          *string          `json:"content"`
	Embeds           *[]Embed         `json:"embeds"`
	Components       *[]Component     `json:"components"`
	AllowedMentions  *AllowedMentions `json:"allowed_mentions"`
	Nonce            json.RawMessage  `json:"nonce"`
	EnforceNonce     bool             `json:"enforce_nonce"`
	Flags            int              `json:"flags"`
	MessageReference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`

	// sent are the fields of the request as sent (a field sent as null is there, as "null").
	sent map[string]json.RawMessage
}

// decodeMessageBody reads a create or edit request; false when it is not a JSON object.
func decodeMessageBody(data []byte) (messageBody, bool) {
	var b messageBody
	if json.Unmarshal(data, &b) != nil || json.Unmarshal(data, &b.sent) != nil {
		return messageBody{}, false
	}
	return b, true
}

// given reports whether the request sets field to a value other than null.
func (b *messageBody) given(field string) bool {
	raw, ok := b.sent[field]
	return ok && strings.TrimSpace(string(raw)) != "null"
}

func (b *messageBody) v2() bool { return b.Flags&FlagComponentsV2 != 0 }

// check applies Discord's rules to a new message (was nil; create when it must show something:
// a deferred response need not) or to an edit of was; it returns a 400 answer or 0. A message
// with files may have nothing else.
//
// A Components V2 message (the flag IS_COMPONENTS_V2, 1<<15) is made of components only: a new
// one sent with content, embeds, stickers or a poll is refused (Create Message), and so is an
// edit giving a V2 message content or embeds. The flag cannot be removed by an edit (it stays);
// an edit may set it on a message of content or embeds if it resets content to null and embeds
// to [] (Edit Message). Components with V2 kinds need the flag; the V2 limits apply
// (checkComponents).
func (b *messageBody) check(was *Message, create bool, files ...File) (int, any) {
	if b.v2() || (was != nil && was.V2()) {
		return b.checkV2(was, create, len(files))
	}
	return b.checkClassic(create, len(files))
}

// checkV2 is check for a message that is, or becomes, a Components V2 one.
func (b *messageBody) checkV2(was *Message, create bool, files int) (int, any) {
	for _, f := range []string{"content", "sticker_ids", "poll", "shared_client_theme"} {
		if b.given(f) {
			return invalidForm([]string{f}, "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
				"The '"+f+"' field cannot be used when using MessageFlags.IS_COMPONENTS_V2")
		}
	}
	if b.Embeds != nil && len(*b.Embeds) > 0 {
		return invalidForm([]string{"embeds"}, "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
			"The 'embeds' field cannot be used when using MessageFlags.IS_COMPONENTS_V2")
	}
	if was != nil && !was.V2() {
		// Setting the flag: what the message shows of content and embeds must be reset.
		if was.Content != "" && !b.reset("content") {
			return invalidForm([]string{"content"}, "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
				"Setting MessageFlags.IS_COMPONENTS_V2 needs content reset to null")
		}
		if len(was.Embeds) > 0 && b.Embeds == nil {
			return invalidForm([]string{"embeds"}, "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
				"Setting MessageFlags.IS_COMPONENTS_V2 needs embeds reset to []")
		}
	}
	if (create || (was != nil && !was.V2())) && (b.Components == nil || len(*b.Components) == 0) && files == 0 {
		return invalidForm([]string{"components"}, "BASE_TYPE_REQUIRED", "A Components V2 message needs components")
	}
	if b.Components != nil {
		if err := checkComponents(*b.Components, true); err != nil {
			return formErr(err)
		}
	}
	return 0, nil
}

// checkClassic is check for a message of content, embeds and action rows.
func (b *messageBody) checkClassic(create bool, files int) (int, any) {
	if b.Content != nil && utf8.RuneCountInString(*b.Content) > MaxContent {
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
	}
	if b.Embeds != nil {
		if st, resp := checkEmbeds(*b.Embeds); st != 0 {
			return st, resp
		}
	}
	if b.Components != nil {
		if err := checkComponents(*b.Components, false); err != nil {
			return formErr(err)
		}
	}
	if create && files == 0 && (b.Content == nil || *b.Content == "") && (b.Embeds == nil || len(*b.Embeds) == 0) &&
		(b.Components == nil || len(*b.Components) == 0) {
		return errorResp(http.StatusBadRequest, 50006, "Cannot send an empty message")
	}
	return 0, nil
}

// checkEmbeds applies Discord's embed limits: 10 embeds, a title of 256 characters, a
// description of 4,096, 25 fields of a name of 1–256 and a value of 1–1,024, a footer of 2,048,
// and 6,000 characters across all of them.
func checkEmbeds(embeds []Embed) (int, any) {
	if len(embeds) > MaxEmbeds {
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: embeds: Must be 10 or fewer in length.")
	}
	total := 0
	for _, e := range embeds {
		if utf8.RuneCountInString(e.Title) > 256 || utf8.RuneCountInString(e.Description) > 4096 || len(e.Fields) > 25 {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: embeds: embed too large")
		}
		for _, f := range e.Fields {
			// A field's name and value are required: up to 256 and 1,024 characters.
			if n, v := utf8.RuneCountInString(f.Name), utf8.RuneCountInString(f.Value); n == 0 || n > 256 || v == 0 || v > 1024 {
				return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: embeds: field name or value out of bounds")
			}
		}
		if e.Footer != nil && utf8.RuneCountInString(e.Footer.Text) > 2048 {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: embeds: footer text too long")
		}
		total += e.size()
	}
	if total > MaxEmbedTotal {
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: embeds: Embed size exceeds maximum size of 6000")
	}
	return 0, nil
}

// reset reports whether the request sends field as null.
func (b *messageBody) reset(field string) bool {
	raw, ok := b.sent[field]
	return ok && strings.TrimSpace(string(raw)) == "null"
}

func nonceString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// apply makes the (checked) request's changes to m; setting IS_COMPONENTS_V2 clears its content
// and embeds, and the flag stays once set.
func (b *messageBody) apply(m *Message) {
	if b.v2() && !m.V2() {
		m.Flags |= FlagComponentsV2
		m.Content, m.Embeds = "", nil
	}
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Embeds != nil {
		m.Embeds = *b.Embeds
	}
	if b.Components != nil {
		m.Components = *b.Components
	}
	if b.AllowedMentions != nil {
		m.AllowedMentions = b.AllowedMentions
	}
}
