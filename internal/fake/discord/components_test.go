package discordfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"github.com/bwmarrin/discordgo"
)

// call makes a REST call with body (JSON text) and returns Discord's error code, 0 on success.
func call(t *testing.T, dg *discordgo.Session, method, ep, body string) (json.RawMessage, int) {
	t.Helper()
	raw, err := dg.RequestWithBucketID(method, ep, json.RawMessage(body), ep)
	if err == nil {
		return raw, 0
	}
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		t.Fatalf("%s %s: %v", method, ep, err)
	}
	return nil, re.Message.Code
}

func idOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m struct{ ID string }
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		t.Fatalf("no message id in %s", raw)
	}
	return m.ID
}

const v2Card = `{"flags":32768,"allowed_mentions":{"parse":[]},"components":[{"type":17,"accent_color":3066993,"components":[` +
	`{"type":10,"content":"### Title"},{"type":14,"divider":true,"spacing":1},{"type":10,"content":"The answer."}]},` +
	`{"type":1,"components":[{"type":2,"style":1,"label":"Again","custom_id":"again"}]}]}`

// TestFakeComponentsV2Messages proves the fake takes a Components V2 message only as Discord
// does: with the flag, without content or embeds, within 40 components and 4,000 characters of
// text displays; and V2 components without the flag are refused.
func TestFakeComponentsV2Messages(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	ep := discordgo.EndpointChannelMessages(ch)
	raw, code := call(t, dg, "POST", ep, v2Card)
	if code != 0 {
		t.Fatalf("a V2 card refused: %d", code)
	}
	m, _ := s.Message(idOf(t, raw))
	if !m.V2() || !strings.Contains(m.Text(), "The answer.") || strings.Join(CustomIDs(m.Components), ",") != "again" {
		t.Errorf("stored %+v", m)
	}
	var dm discordgo.Message
	if err := json.Unmarshal(raw, &dm); err != nil || dm.Flags&discordgo.MessageFlagsIsComponentsV2 == 0 || len(dm.Components) != 2 {
		t.Errorf("discordgo reads the answer as %+v, %v", dm, err)
	}
	tds := func(n, size int) string {
		var parts []string
		for range n {
			parts = append(parts, fmt.Sprintf(`{"type":10,"content":%q}`, strings.Repeat("x", size)))
		}
		return strings.Join(parts, ",")
	}
	for _, tc := range []struct{ name, body string }{
		{"V2 components without the flag", `{"components":[{"type":10,"content":"hi"}]}`},
		{"content beside the flag", `{"flags":32768,"content":"hi","components":[{"type":10,"content":"hi"}]}`},
		{"an empty content beside the flag", `{"flags":32768,"content":"","components":[{"type":10,"content":"hi"}]}`},
		{"embeds beside the flag", `{"flags":32768,"embeds":[{"title":"t"}],"components":[{"type":10,"content":"hi"}]}`},
		{"the flag and no components", `{"flags":32768}`},
		{"41 components", `{"flags":32768,"components":[{"type":17,"components":[` + tds(40, 1) + `]}]}`},
		{"4,001 characters of text", `{"flags":32768,"components":[` + tds(3, 1000) + `,{"type":10,"content":"` + strings.Repeat("y", 1001) + `"}]}`},
		{"a button at the top level", `{"flags":32768,"components":[{"type":2,"style":1,"label":"x","custom_id":"x"}]}`},
		{"a duplicate custom_id", `{"flags":32768,"components":[{"type":1,"components":[{"type":2,"style":1,"label":"x","custom_id":"x"},{"type":2,"style":1,"label":"y","custom_id":"x"}]}]}`},
		{"six legacy rows", `{"content":"x","components":[` + strings.TrimSuffix(strings.Repeat(`{"type":1,"components":[{"type":2,"style":1,"label":"x","custom_id":"x"}]},`, 6), ",") + `]}`},
	} {
		if _, code := call(t, dg, "POST", ep, tc.body); code != 50035 {
			t.Errorf("%s: code %d, want 50035", tc.name, code)
		}
	}
	if _, code := call(t, dg, "POST", ep, `{"flags":32768,"components":[{"type":17,"components":[`+tds(39, 1)+`]}]}`); code != 0 {
		t.Errorf("40 components: refused with %d", code)
	}
	if _, code := call(t, dg, "POST", ep, `{"flags":32768,"components":[`+tds(4, 1000)+`]}`); code != 0 {
		t.Errorf("4,000 characters of text: refused with %d", code)
	}
}

// TestFakeComponentsV2Edits proves the flag stays: a V2 message is refused content and embeds by
// an edit and keeps its flag through an edit that does not name it; a message of content becomes
// a V2 one by an edit that sets the flag with content null and embeds [], and not otherwise.
func TestFakeComponentsV2Edits(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	raw, _ := call(t, dg, "POST", discordgo.EndpointChannelMessages(ch), v2Card)
	v2 := discordgo.EndpointChannelMessage(ch, idOf(t, raw))
	if _, code := call(t, dg, "PATCH", v2, `{"content":"text now","embeds":[],"components":[]}`); code != 50035 {
		t.Errorf("content into a V2 message: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "PATCH", v2, `{"content":null,"embeds":[{"title":"t"}],"components":[]}`); code != 50035 {
		t.Errorf("embeds into a V2 message: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "PATCH", v2, `{"content":null,"embeds":[],"components":[{"type":10,"content":"edited"}]}`); code != 0 {
		t.Errorf("a V2 edit without the flag: refused %d", code)
	}
	if m, _ := s.Message(strings.TrimPrefix(v2, discordgo.EndpointChannelMessages(ch)+"/")); !m.V2() || m.Text() != "\nedited" {
		t.Errorf("after the edit: flags %d, text %q", m.Flags, m.Text())
	}

	raw, _ = call(t, dg, "POST", discordgo.EndpointChannelMessages(ch), `{"content":"working","embeds":[{"title":"t"}]}`)
	legacy := discordgo.EndpointChannelMessage(ch, idOf(t, raw))
	if _, code := call(t, dg, "PATCH", legacy, `{"flags":32768,"embeds":[],"components":[{"type":10,"content":"v2"}]}`); code != 50035 {
		t.Errorf("setting the flag without content null: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "PATCH", legacy, `{"flags":32768,"content":null,"components":[{"type":10,"content":"v2"}]}`); code != 50035 {
		t.Errorf("setting the flag without embeds []: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "PATCH", legacy, `{"components":[{"type":10,"content":"v2"}]}`); code != 50035 {
		t.Errorf("V2 components on a message of content without the flag: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "PATCH", legacy, `{"flags":32768,"content":null,"embeds":[],"components":[{"type":10,"content":"v2"}]}`); code != 0 {
		t.Errorf("setting the flag as documented: refused %d", code)
	}
	m, _ := s.Message(strings.TrimPrefix(legacy, discordgo.EndpointChannelMessages(ch)+"/"))
	if !m.V2() || m.Content != "" || len(m.Embeds) != 0 || !strings.Contains(m.Text(), "v2") || m.Edits != 1 {
		t.Errorf("after setting the flag: %+v", m)
	}
}

// TestFakeInteractionResponsesAndComponentsV2 proves a deferred response takes no flag but
// EPHEMERAL, and becomes a V2 message by the edit of @original that sets the flag.
func TestFakeInteractionResponsesAndComponentsV2(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	id := s.Slash(ch, User{ID: "42"}, "bot", "status", "")
	ix, _ := s.InteractionByID(id)
	cb := discordgo.EndpointInteractionResponse(id, ix.Token)
	if _, code := call(t, dg, "POST", cb, `{"type":5,"data":{"flags":32832}}`); code != 50035 {
		t.Errorf("a deferral with IS_COMPONENTS_V2: code %d, want 50035", code)
	}
	if _, code := call(t, dg, "POST", cb, `{"type":5,"data":{"flags":64}}`); code != 0 {
		t.Fatalf("an ephemeral deferral refused: %d", code)
	}
	orig := discordgo.EndpointInteractionResponseActions(ApplicationID, ix.Token)
	if _, code := call(t, dg, "PATCH", orig, `{"flags":32832,"content":null,"embeds":[],"components":[{"type":10,"content":"status: fine"}]}`); code != 0 {
		t.Fatalf("the V2 edit of @original refused: %d", code)
	}
	ix, _ = s.InteractionByID(id)
	if r := ix.Replies(); len(r) != 1 || !r[0].V2() || !r[0].Ephemeral || !strings.Contains(r[0].Text(), "status: fine") {
		t.Errorf("replies %+v", r)
	}
}

// TestFakeModalOfLabelsRoundTrip proves the fake takes a modal of labels as the Component
// Reference has it, refuses what it refuses, and submits it as Discord does: each input in its
// label, a select's picks as values — and nothing a user's client would not let them submit.
func TestFakeModalOfLabelsRoundTrip(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	modal := func(components string) string {
		return `{"type":9,"data":{"title":"Details","custom_id":"form","components":[` + components + `]}}`
	}
	sel := `{"type":18,"label":"Audience","component":{"type":3,"custom_id":"aud","options":[{"label":"eng","value":"v-eng"},{"label":"exec","value":"v-exec"}]}}`
	text := `{"type":18,"label":"Notes","description":"anything","component":{"type":4,"custom_id":"notes","style":2,"required":false,"max_length":4000}}`
	for _, tc := range []struct{ name, body string }{
		{"six components", modal(strings.TrimSuffix(strings.Repeat(text+",", 6), ","))},
		{"a label past 45 characters", modal(strings.Replace(text, "Notes", strings.Repeat("n", 46), 1))},
		{"a disabled select", modal(strings.Replace(sel, `"custom_id":"aud"`, `"custom_id":"aud","disabled":false`, 1))},
		{"a required select with min_values 0", modal(strings.Replace(sel, `"custom_id":"aud"`, `"custom_id":"aud","min_values":0`, 1))},
		{"a button in a label", modal(`{"type":18,"label":"x","component":{"type":2,"style":1,"label":"x","custom_id":"b"}}`)},
		{"a label without its input", modal(`{"type":18,"label":"x"}`)},
	} {
		id := s.Click(ch, "", User{ID: "42"}, "open")
		ix, _ := s.InteractionByID(id)
		if _, code := call(t, dg, "POST", discordgo.EndpointInteractionResponse(id, ix.Token), tc.body); code != 50035 {
			t.Errorf("%s: code %d, want 50035", tc.name, code)
		}
	}
	id := s.Click(ch, "", User{ID: "42"}, "open")
	ix, _ := s.InteractionByID(id)
	if _, code := call(t, dg, "POST", discordgo.EndpointInteractionResponse(id, ix.Token), modal(sel+","+text)); code != 0 {
		t.Fatalf("a modal of labels refused: %d", code)
	}
	ix, _ = s.InteractionByID(id)
	custom, inputs, ok := ix.Modal()
	if !ok || custom != "form" || len(inputs) != 2 || inputs[0].CustomID != "aud" || inputs[1].CustomID != "notes" {
		t.Fatalf("modal %q %+v %v", custom, inputs, ok)
	}
	if got := s.SubmitValues(ch, "", User{ID: "42"}, "form", map[string][]string{"aud": {"v-nope"}}); got != "" {
		t.Error("a value that is none of the options was submitted")
	}
	if got := s.SubmitValues(ch, "", User{ID: "42"}, "form", map[string][]string{"notes": {"hi"}}); got != "" {
		t.Error("a required select left empty was submitted")
	}
	sub := s.SubmitValues(ch, "", User{ID: "42"}, "form", map[string][]string{"aud": {"v-exec"}})
	if sub == "" {
		t.Fatal("a valid answer was not submitted")
	}
	var data struct {
		Components []struct {
			Type      int `json:"type"`
			Component struct {
				Type     int      `json:"type"`
				CustomID string   `json:"custom_id"`
				Values   []string `json:"values"`
				Value    *string  `json:"value"`
			} `json:"component"`
		} `json:"components"`
	}
	got, _ := s.InteractionByID(sub)
	if err := json.Unmarshal(got.Data, &data); err != nil || len(data.Components) != 2 {
		t.Fatalf("submit data %s: %v", got.Data, err)
	}
	if c := data.Components[0]; c.Type != TypeLabel || c.Component.Type != TypeStringSelect || c.Component.CustomID != "aud" ||
		strings.Join(c.Component.Values, ",") != "v-exec" {
		t.Errorf("the select came back as %+v", c)
	}
	if c := data.Components[1]; c.Type != TypeLabel || c.Component.Type != TypeTextInput || c.Component.Value == nil || *c.Component.Value != "" {
		t.Errorf("the empty optional text input came back as %+v", c)
	}
}
