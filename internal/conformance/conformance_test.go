package conformance

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// want is one expected violation: its rule and path.
type want struct {
	rule RuleKind
	path string
}

type bodyCase struct {
	name   string
	method string
	ct     string
	body   string
	want   []want // nil: conforming
}

const (
	ctJSON = "application/json"
	ctForm = "application/x-www-form-urlencoded"
)

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

func runCases(t *testing.T, p Platform, cases []bodyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(p, tc.method, tc.ct, []byte(tc.body))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations, want %d:%s", len(got), len(tc.want), Report(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Rule != w.rule || g.Path != w.path || g.Doc == "" || g.Platform != p || g.Method != tc.method {
					t.Errorf("violation %d = %s, want %s at %q", i, g, w.rule, w.path)
				}
				if !strings.HasPrefix(docURL(g.Doc), "https://") {
					t.Errorf("violation %d cites %q, want a documentation URL", i, g.Doc)
				}
			}
		})
	}
}

func docURL(doc string) string { return strings.Fields(doc)[0] }

func blocks(bs ...string) string { return "[" + strings.Join(bs, ",") + "]" }

func section(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}})
	return string(b)
}

func button(text, actionID, value, style string) string {
	m := map[string]any{"type": "button", "text": map[string]any{"type": "plain_text", "text": text}, "action_id": actionID, "value": value}
	if style != "" {
		m["style"] = style
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

// TestSlackRules is the table of Slack bodies, conforming and not, one or more per rule kind.
func TestSlackRules(t *testing.T) {
	many := make([]string, 51)
	for i := range many {
		many[i] = `{"type":"divider"}`
	}
	ctx11 := make([]string, 11)
	for i := range ctx11 {
		ctx11[i] = `{"type":"mrkdwn","text":"x"}`
	}
	modal := func(title string, bs string, submit bool) string {
		m := map[string]any{"type": "modal", "title": map[string]any{"type": "plain_text", "text": title}, "blocks": json.RawMessage(bs)}
		if submit {
			m["submit"] = map[string]any{"type": "plain_text", "text": "Send"}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	input := `{"type":"input","label":{"type":"plain_text","text":"Why"},"element":{"type":"plain_text_input","action_id":"a"}}`
	runCases(t, Slack, []bodyCase{
		{"post: text and blocks", "chat.postMessage", ctForm, form("token", "x", "channel", "C1", "text", "hi",
			"blocks", blocks(`{"type":"header","text":{"type":"plain_text","text":"Title"}}`, section("body"),
				`{"type":"actions","elements":[`+button("Yes", "y", "1", "primary")+`]}`,
				`{"type":"context","elements":[{"type":"mrkdwn","text":"c"}]}`)), nil},
		{"post: JSON body", "chat.postMessage", ctJSON, `{"channel":"C1","text":"hi","unfurl_links":false}`, nil},
		{"required: channel", "chat.postMessage", ctForm, form("text", "hi"), []want{{RuleRequired, "channel"}}},
		{"required: one of text, blocks", "chat.postMessage", ctForm, form("channel", "C1"), []want{{RuleRequired, ""}}},
		{"required: section text or fields", "chat.postMessage", ctForm, form("channel", "C1", "blocks", `[{"type":"section"}]`),
			[]want{{RuleRequired, "blocks[0]"}}},
		{"required: modal submit with an input", "views.open", ctForm, form("trigger_id", "t", "view", modal("Ask", "["+input+"]", false)),
			[]want{{RuleRequired, "view.submit"}}},
		{"type: blocks not an array", "chat.postMessage", ctForm, form("channel", "C1", "blocks", `{"type":"divider"}`),
			[]want{{RuleType, "blocks"}}},
		{"type: unfurl_links not a boolean", "chat.postMessage", ctJSON, `{"channel":"C1","text":"x","unfurl_links":"maybe"}`,
			[]want{{RuleType, "unfurl_links"}}},
		{"count: 51 blocks", "chat.postMessage", ctForm, form("channel", "C1", "blocks", blocks(many...)), []want{{RuleCount, "blocks"}}},
		{"count: 11 context elements", "chat.postMessage", ctForm, form("channel", "C1", "blocks",
			`[{"type":"context","elements":[`+strings.Join(ctx11, ",")+`]}]`), []want{{RuleCount, "blocks[0].elements"}}},
		{"length: section text 3001", "chat.postMessage", ctForm, form("channel", "C1", "blocks", blocks(section(rep("é", 3001)))),
			[]want{{RuleLength, "blocks[0].text.text"}}},
		{"length: section text 3000 in characters", "chat.postMessage", ctForm, form("channel", "C1", "blocks", blocks(section(rep("é", 3000)))), nil},
		{"length: header 151", "chat.update", ctForm, form("channel", "C1", "ts", "1.2", "blocks",
			`[{"type":"header","text":{"type":"plain_text","text":"`+rep("h", 151)+`"}}]`), []want{{RuleLength, "blocks[0].text.text"}}},
		{"length: button text, action_id, value", "chat.postMessage", ctForm, form("channel", "C1", "blocks",
			`[{"type":"actions","elements":[`+button(rep("b", 76), rep("a", 256), rep("v", 2001), "")+`]}]`),
			[]want{{RuleLength, "blocks[0].elements[0].text.text"}, {RuleLength, "blocks[0].elements[0].action_id"},
				{RuleLength, "blocks[0].elements[0].value"}}},
		{"length: block_id 256", "chat.postMessage", ctForm, form("channel", "C1", "blocks", `[{"type":"divider","block_id":"`+rep("b", 256)+`"}]`),
			[]want{{RuleLength, "blocks[0].block_id"}}},
		{"length: modal title 25", "views.open", ctForm, form("trigger_id", "t", "view", modal(rep("t", 25), `[`+section("x")+`]`, false)),
			[]want{{RuleLength, "view.title.text"}}},
		{"count: modal of 101 blocks", "views.open", ctForm, form("trigger_id", "t", "view", modal("Ask", blocks(append(many, many[:50]...)...), false)),
			[]want{{RuleCount, "view.blocks"}}},
		{"enum: button style", "chat.postMessage", ctForm, form("channel", "C1", "blocks", `[{"type":"actions","elements":[`+button("B", "a", "v", "secondary")+`]}]`),
			[]want{{RuleEnum, "blocks[0].elements[0].style"}}},
		{"enum: header text must be plain_text", "chat.postMessage", ctForm, form("channel", "C1", "blocks",
			`[{"type":"header","text":{"type":"mrkdwn","text":"x"}}]`), []want{{RuleStructure, "blocks[0].text.type"}}},
		{"enum: task status", "chat.appendStream", ctForm, form("channel", "C1", "ts", "1.2", "chunks",
			`[{"type":"task_update","id":"t","title":"T","status":"done"}]`), []want{{RuleEnum, "chunks[0].status"}}},
		{"unknown: argument the method does not take", "chat.update", ctForm, form("channel", "C1", "ts", "1.2", "text", "x", "unfurl_links", "false"),
			[]want{{RuleUnknown, "unfurl_links"}}},
		{"unknown: block field", "chat.postMessage", ctForm, form("channel", "C1", "blocks", `[{"type":"divider","color":"red"}]`),
			[]want{{RuleUnknown, "blocks[0].color"}}},
		{"structure: input block in a message", "chat.postMessage", ctForm, form("channel", "C1", "blocks", "["+input+"]"),
			[]want{{RuleStructure, "blocks[0].type"}}},
		{"structure: input block in a modal", "views.open", ctForm, form("trigger_id", "t", "view", modal("Ask", "["+input+"]", true)), nil},
		{"structure: section in an actions block", "chat.postMessage", ctForm, form("channel", "C1", "blocks",
			`[{"type":"actions","elements":[`+section("x")+`]}]`), []want{{RuleStructure, "blocks[0].elements[0].type"}}},
		{"structure: markdown_text with text", "chat.postMessage", ctForm, form("channel", "C1", "text", "a", "markdown_text", "b"),
			[]want{{RuleStructure, ""}}},
		{"body: invalid JSON", "chat.postMessage", ctJSON, `{"channel":`, []want{{RuleBody, ""}}},
	})
}

// TestDiscordRules is the table of Discord bodies, conforming and not, one or more per rule kind.
func TestDiscordRules(t *testing.T) {
	const msg = "POST /channels/{channel}/messages"
	row := func(cs ...string) string { return `{"type":1,"components":[` + strings.Join(cs, ",") + `]}` }
	btn := func(label, id string) string {
		b, _ := json.Marshal(map[string]any{"type": 2, "style": 1, "label": label, "custom_id": id})
		return string(b)
	}
	sel := func(n int) string {
		opts := make([]string, n)
		for i := range opts {
			opts[i] = `{"label":"o","value":"v` + string(rune('a'+i%26)) + `"}`
		}
		return `{"type":3,"custom_id":"s","options":[` + strings.Join(opts, ",") + `]}`
	}
	fields := func(n int) string {
		fs := make([]string, n)
		for i := range fs {
			fs[i] = `{"name":"n","value":"v"}`
		}
		return "[" + strings.Join(fs, ",") + "]"
	}
	modal := func(title, label string) string {
		return `{"type":9,"data":{"custom_id":"m","title":"` + title + `","components":[{"type":18,"label":"` + label +
			`","component":{"type":4,"custom_id":"t","style":1}}]}}`
	}
	six := make([]string, 6)
	for i := range six {
		six[i] = row(btn("b", "id"+string(rune('a'+i))))
	}
	v2text := func(n int) string {
		return `{"flags":32768,"components":[{"type":17,"components":[{"type":10,"content":"` + rep("x", n) + `"}]}]}`
	}
	runCases(t, Discord, []bodyCase{
		{"message: content, embed, row", msg, ctJSON, `{"content":"hi","embeds":[{"title":"T","description":"d","fields":` + fields(2) +
			`,"footer":{"text":"f"}}],"components":[` + row(btn("Yes", "y"), btn("No", "n")) + `],"allowed_mentions":{"parse":[]}}`, nil},
		{"message: components v2", msg, ctJSON, v2text(10), nil},
		{"required: something to send", msg, ctJSON, `{"tts":false}`, []want{{RuleRequired, ""}}},
		{"required: button custom_id", msg, ctJSON, `{"components":[` + row(`{"type":2,"style":1,"label":"x"}`) + `]}`,
			[]want{{RuleStructure, "components[0].components[0].custom_id"}}},
		{"required: modal title", "POST /interactions/{id}/{token}/callback", ctJSON,
			`{"type":9,"data":{"custom_id":"m","components":[{"type":10,"content":"x"}]}}`, []want{{RuleRequired, "data.title"}}},
		{"type: content a number", msg, ctJSON, `{"content":5}`, []want{{RuleType, "content"}}},
		{"length: content 2001", msg, ctJSON, `{"content":"` + rep("é", 2001) + `"}`, []want{{RuleLength, "content"}}},
		{"length: embed title, description, field, footer", msg, ctJSON, `{"embeds":[{"title":"` + rep("t", 257) + `","description":"` +
			rep("d", 4097) + `","fields":[{"name":"` + rep("n", 257) + `","value":"` + rep("v", 1025) + `"}],"footer":{"text":"` + rep("f", 2049) + `"}}]}`,
			[]want{{RuleLength, "embeds[0].title"}, {RuleLength, "embeds[0].description"}, {RuleLength, "embeds[0].footer.text"},
				{RuleLength, "embeds[0].fields[0].name"}, {RuleLength, "embeds[0].fields[0].value"}, {RuleLength, "embeds"}}},
		{"length: 6000 in all embeds", msg, ctJSON, `{"embeds":[{"description":"` + rep("d", 4000) + `"},{"description":"` + rep("d", 2001) + `"}]}`,
			[]want{{RuleLength, "embeds"}}},
		{"length: custom_id and label", msg, ctJSON, `{"components":[` + row(btn(rep("l", 81), rep("c", 101))) + `]}`,
			[]want{{RuleLength, "components[0].components[0].label"}, {RuleLength, "components[0].components[0].custom_id"}}},
		{"length: modal title and label", "POST /interactions/{id}/{token}/callback", ctJSON, modal(rep("t", 46), rep("l", 46)),
			[]want{{RuleLength, "data.title"}, {RuleLength, "data.components[0].label"}}},
		{"modal conforming", "POST /interactions/{id}/{token}/callback", ctJSON, modal("Title", "Label"), nil},
		{"count: 11 embeds", msg, ctJSON, `{"embeds":[` + strings.TrimSuffix(rep(`{"title":"t"},`, 11), ",") + `]}`, []want{{RuleCount, "embeds"}}},
		{"count: 26 fields", msg, ctJSON, `{"embeds":[{"fields":` + fields(26) + `}]}`, []want{{RuleCount, "embeds[0].fields"}}},
		{"count: 6 buttons in a row", msg, ctJSON, `{"components":[` + row(btn("a", "a"), btn("b", "b"), btn("c", "c"), btn("d", "d"), btn("e", "e"), btn("f", "f")) + `]}`,
			[]want{{RuleCount, "components[0].components"}}},
		{"count: 26 select options", msg, ctJSON, `{"components":[` + row(sel(26)) + `]}`, []want{{RuleCount, "components[0].components[0].options"}}},
		{"count: 6 action rows", msg, ctJSON, `{"components":[` + strings.Join(six, ",") + `]}`, []want{{RuleStructure, "components"}}},
		{"enum: button style 7", msg, ctJSON, `{"components":[` + row(`{"type":2,"style":7,"label":"x","custom_id":"c"}`) + `]}`,
			[]want{{RuleEnum, "components[0].components[0].style"}}},
		{"enum: callback type 3", "POST /interactions/{id}/{token}/callback", ctJSON, `{"type":3}`, []want{{RuleStructure, "type"}}},
		{"enum: auto_archive_duration", "POST /channels/{channel}/messages/{message}/threads", ctJSON, `{"name":"t","auto_archive_duration":30}`,
			[]want{{RuleEnum, "auto_archive_duration"}}},
		{"unknown: message field", msg, ctJSON, `{"content":"x","colour":1}`, []want{{RuleUnknown, "colour"}}},
		{"unknown: command field", "PUT /applications/{app}/commands", ctJSON, `[{"name":"ask","description":"d","invitable":true}]`,
			[]want{{RuleUnknown, "[0].invitable"}}},
		{"structure: select beside a button", msg, ctJSON, `{"components":[` + row(btn("a", "a"), sel(1)) + `]}`,
			[]want{{RuleStructure, "components[0].components[1]"}}},
		{"structure: v2 component without the flag", msg, ctJSON, `{"components":[{"type":10,"content":"x"}]}`,
			[]want{{RuleStructure, "components[0].type"}}},
		{"structure: content with the v2 flag", msg, ctJSON, `{"content":"x","flags":32768,"components":[{"type":10,"content":"x"}]}`,
			[]want{{RuleStructure, "content"}}},
		{"structure: 4001 characters of text displays", msg, ctJSON, v2text(4001), []want{{RuleStructure, "components"}}},
		{"structure: button in a label", "POST /interactions/{id}/{token}/callback", ctJSON,
			`{"type":9,"data":{"custom_id":"m","title":"t","components":[{"type":18,"label":"l","component":` + btn("b", "b") + `}]}}`,
			[]want{{RuleStructure, "data.components[0].component.type"}}},
		{"body: garbage multipart", msg, "multipart/form-data; boundary=xyz", "garbage", []want{{RuleBody, ""}}},
	})
}

// TestTelegramRules is the table of Telegram bodies, conforming and not, one or more per rule kind.
func TestTelegramRules(t *testing.T) {
	kb := func(text, data string) string {
		b, _ := json.Marshal(map[string]any{"inline_keyboard": [][]map[string]any{{{"text": text, "callback_data": data}}}})
		return string(b)
	}
	runCases(t, Telegram, []bodyCase{
		{"sendMessage: HTML with keyboard", "sendMessage", ctForm, form("chat_id", "5", "text", "<b>hi</b>", "parse_mode", "HTML",
			"link_preview_options", `{"is_disabled":true}`, "reply_parameters", `{"message_id":3,"allow_sending_without_reply":true}`,
			"reply_markup", kb("Yes", "y:1")), nil},
		{"length: 4096 shown, tags aside", "sendMessage", ctForm, form("chat_id", "5", "text", "<i>"+rep("x", 4095)+"&amp;</i>", "parse_mode", "HTML"), nil},
		{"length: 4097 shown", "sendMessage", ctForm, form("chat_id", "5", "text", "<i>"+rep("x", 4096)+"&lt;</i>", "parse_mode", "HTML"),
			[]want{{RuleLength, "text"}}},
		{"length: UTF-16 units", "editMessageText", ctForm, form("chat_id", "5", "message_id", "1", "text", rep("😀", 2049)),
			[]want{{RuleLength, "text"}}},
		{"length: empty text", "sendMessage", ctForm, form("chat_id", "5", "text", ""), []want{{RuleLength, "text"}}},
		{"length: callback_data 65 bytes", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "reply_markup", kb("B", rep("é", 33))),
			[]want{{RuleLength, "reply_markup.inline_keyboard[0][0].callback_data"}}},
		{"length: button text empty", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "reply_markup", kb("", "d")),
			[]want{{RuleLength, "reply_markup.inline_keyboard[0][0].text"}}},
		{"length: answerCallbackQuery text 201", "answerCallbackQuery", ctForm, form("callback_query_id", "q", "text", rep("t", 201)),
			[]want{{RuleLength, "text"}}},
		{"required: chat_id", "sendMessage", ctForm, form("text", "x"), []want{{RuleRequired, "chat_id"}}},
		{"required: edit target", "editMessageText", ctForm, form("text", "x"), []want{{RuleRequired, "chat_id"}, {RuleRequired, "message_id"}}},
		{"required: non-zero draft_id", "sendMessageDraft", ctForm, form("chat_id", "5", "draft_id", "0", "text", "x"), []want{{RuleRequired, "draft_id"}}},
		{"draft: empty text allowed", "sendMessageDraft", ctForm, form("chat_id", "5", "draft_id", "7"), nil},
		{"type: chat_id of a draft is an integer", "sendMessageDraft", ctForm, form("chat_id", "@chan", "draft_id", "7", "text", "x"),
			[]want{{RuleType, "chat_id"}}},
		{"type: reply_markup not JSON", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "reply_markup", "yes"),
			[]want{{RuleType, "reply_markup"}}},
		{"count: 101 commands", "setMyCommands", ctJSON, `{"commands":[` + strings.TrimSuffix(rep(`{"command":"a","description":"d"},`, 101), ",") + `]}`,
			[]want{{RuleCount, "commands"}}},
		{"enum: parse_mode", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "parse_mode", "html"), []want{{RuleEnum, "parse_mode"}}},
		{"enum: chat action", "sendChatAction", ctForm, form("chat_id", "5", "action", "dancing"), []want{{RuleEnum, "action"}}},
		{"enum: command characters", "setMyCommands", ctForm, form("commands", `[{"command":"Ask-Me","description":"d"}]`),
			[]want{{RuleEnum, "commands[0].command"}}},
		{"unknown: parameter", "deleteMessage", ctForm, form("chat_id", "5", "message_id", "1", "text", "x"), []want{{RuleUnknown, "text"}}},
		{"unknown: button field", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "reply_markup",
			`{"inline_keyboard":[[{"text":"a","callback_data":"d","colour":"red"}]]}`),
			[]want{{RuleUnknown, "reply_markup.inline_keyboard[0][0].colour"}, {RuleStructure, "reply_markup.inline_keyboard[0][0]"}}},
		{"structure: button with two actions", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "reply_markup",
			`{"inline_keyboard":[[{"text":"a","callback_data":"d","url":"https://e.x"}]]}`),
			[]want{{RuleStructure, "reply_markup.inline_keyboard[0][0]"}}},
		{"structure: keyboard rows are arrays", "editMessageText", ctForm, form("chat_id", "5", "message_id", "1", "text", "x", "reply_markup",
			`{"inline_keyboard":[{"text":"a","callback_data":"d"}]}`), []want{{RuleType, "reply_markup.inline_keyboard[0]"}}},
		{"structure: parse_mode and entities", "sendMessage", ctForm, form("chat_id", "5", "text", "x", "parse_mode", "HTML", "entities", "[]"),
			[]want{{RuleStructure, ""}}},
	})
}

// TestUncoveredMethodsAreNotChecked proves a method without rules is let through, whatever its
// body, and that the covered ones are the adapters' methods.
func TestUncoveredMethodsAreNotChecked(t *testing.T) {
	if vs := Check(Telegram, "sendPoll", ctJSON, []byte(`{`)); vs != nil {
		t.Fatalf("uncovered method: %v", vs)
	}
	for p, ms := range map[Platform][]string{
		Slack:    {"chat.postMessage", "chat.update", "views.open", "chat.appendStream", "assistant.threads.setStatus"},
		Discord:  {"POST /channels/{channel}/messages", "POST /interactions/{id}/{token}/callback", "PUT /applications/{app}/commands"},
		Telegram: {"sendMessage", "editMessageText", "sendMessageDraft", "answerCallbackQuery", "setMyCommands", "sendDocument"},
	} {
		for _, m := range ms {
			if !Covered(p, m) {
				t.Errorf("%s %s has no rules", p, m)
			}
		}
	}
}

// TestKnownViolationsAreLeftOut proves an entry of Known drops the violation it matches, and only
// that one.
func TestKnownViolationsAreLeftOut(t *testing.T) {
	saved := Known
	t.Cleanup(func() { Known = saved })
	Known = []KnownViolation{{Platform: Telegram, Method: "sendChatAction", Rule: RuleEnum, Path: "act*", Reason: "test"}}
	if vs := Check(Telegram, "sendChatAction", ctForm, []byte(form("chat_id", "5", "action", "dancing"))); len(vs) != 0 {
		t.Fatalf("known violation reported: %v", vs)
	}
	if vs := Check(Telegram, "sendChatAction", ctForm, []byte(form("action", "typing"))); len(vs) != 1 {
		t.Fatalf("other violation: %v, want it reported", vs)
	}
}

// TestEveryRuleCitesItsDocumentation walks the tables: every field and shape names a doc URL.
func TestEveryRuleCitesItsDocumentation(t *testing.T) {
	seen := map[*Shape]bool{}
	var walkShape func(where string, s *Shape)
	var walkField func(where string, f *Field)
	walkField = func(where string, f *Field) {
		if f.Doc == "" && f.Shape == nil && f.Elem == nil && f.Kind != Any {
			t.Errorf("%s: no documentation", where)
		}
		if f.Doc != "" && !strings.HasPrefix(f.Doc, "https://") {
			t.Errorf("%s: doc %q is not a URL", where, f.Doc)
		}
		if f.Shape != nil {
			walkShape(where, f.Shape)
		}
		if f.Elem != nil {
			walkField(where+"[]", f.Elem)
		}
	}
	walkShape = func(where string, s *Shape) {
		if seen[s] {
			return
		}
		seen[s] = true
		if !strings.HasPrefix(s.Doc, "https://") {
			t.Errorf("%s (%s): doc %q is not a URL", where, s.Name, s.Doc)
		}
		for _, r := range s.Rules {
			if !strings.HasPrefix(r.Doc, "https://") {
				t.Errorf("%s (%s): a rule's doc %q is not a URL", where, s.Name, r.Doc)
			}
		}
		for i := range s.Fields {
			walkField(where+"."+s.Fields[i].Name, &s.Fields[i])
		}
		for k, v := range s.Variants {
			walkShape(where+"<"+k+">", v)
		}
	}
	for p, tab := range tables {
		for m, f := range tab {
			walkField(string(p)+" "+m, f)
		}
	}
}
