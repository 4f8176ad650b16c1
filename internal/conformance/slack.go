package conformance

import (
	"slices"
	"sort"
)

// Slack's rules: each Web API method the adapter calls (the arguments its reference lists,
// typed where the adapter sends them), and Block Kit (docs.slack.dev/reference/block-kit):
// blocks, elements and composition objects, with what may nest where. Slack counts characters.
// Checked against the reference in December 2026.

const (
	slackMethodDoc = "https://docs.slack.dev/reference/methods/"
	slackBlockDoc  = "https://docs.slack.dev/reference/block-kit/blocks/"
	slackElemDoc   = "https://docs.slack.dev/reference/block-kit/block-elements/"
	slackTextDoc   = "https://docs.slack.dev/reference/block-kit/composition-objects/text-object"
	slackOptionDoc = "https://docs.slack.dev/reference/block-kit/composition-objects/option-object"
	slackConfirm   = "https://docs.slack.dev/reference/block-kit/composition-objects/confirmation-dialog-object"
	slackModalDoc  = "https://docs.slack.dev/reference/views/modal-views#modal-fields"
	slackStreamDoc = "https://docs.slack.dev/reference/methods/chat.appendStream"
)

// slackArgs are the arguments each Web API method takes, as its reference page
// (slackMethodDoc + method) lists them, required and optional; the token is taken by every
// method and left out here. Slack ignores an argument a method does not take without a word
// (unfurl_links sent to chat.update changes nothing, and says nothing), so tests must catch it.
var slackArgs = map[string][]string{
	"auth.test":             {},
	"apps.connections.open": {},
	"oauth.v2.access":       {"client_id", "client_secret", "code", "code_verifier", "grant_type", "redirect_uri", "refresh_token"},
	"chat.postMessage": {"as_user", "attachments", "blocks", "channel", "current_draft_last_updated_ts", "icon_emoji",
		"icon_url", "link_names", "markdown_text", "metadata", "mrkdwn", "parse", "reply_broadcast", "text", "thread_ts",
		"unfurl_links", "unfurl_media", "username"},
	// No unfurl_links, unfurl_media, thread_ts: a message keeps its unfurls and its thread.
	"chat.update": {"as_user", "attachments", "blocks", "channel", "file_ids", "link_names", "markdown_text", "metadata",
		"parse", "reply_broadcast", "text", "ts", "unfurled_attachments"},
	"chat.delete": {"as_user", "channel", "ts"},
	// No unfurl_links or unfurl_media: an ephemeral message is never unfurled.
	"chat.postEphemeral": {"as_user", "attachments", "blocks", "channel", "icon_emoji", "icon_url", "link_names",
		"markdown_text", "metadata", "parse", "text", "thread_ts", "user", "username"},
	"chat.startStream": {"channel", "chunks", "icon_emoji", "icon_url", "markdown_text", "recipient_team_id",
		"recipient_user_id", "task_display_mode", "thread_ts", "username"},
	"chat.appendStream":           {"channel", "chunks", "markdown_text", "ts"},
	"chat.stopStream":             {"blocks", "channel", "chunks", "markdown_text", "metadata", "ts"},
	"assistant.threads.setStatus": {"channel_id", "icon_emoji", "icon_url", "loading_messages", "status", "thread_ts", "username"},
	// thread_ts only for apps on assistant_view: an agent_view app's call with it silently fails.
	"assistant.threads.setSuggestedPrompts": {"channel_id", "prompts", "thread_ts", "title"},
	"assistant.threads.setTitle":            {"channel_id", "thread_ts", "title"},
	"files.getUploadURLExternal":            {"alt_txt", "filename", "length", "snippet_type"},
	"files.completeUploadExternal": {"blocks", "channel_id", "channels", "files", "icon_emoji", "icon_url",
		"initial_comment", "thread_ts", "username"},
	"conversations.history": {"channel", "cursor", "include_all_metadata", "inclusive", "latest", "limit", "oldest"},
	"conversations.replies": {"channel", "cursor", "include_all_metadata", "inclusive", "latest", "limit", "oldest", "ts"},
	"views.open":            {"interactivity_pointer", "trigger_id", "view"},
}

// SlackArgs returns the arguments Slack's reference lists for method (the token aside), sorted;
// ok is false for a method the tables do not cover.
func SlackArgs(method string) (args []string, ok bool) {
	args, ok = slackArgs[method]
	return slices.Clone(args), ok
}

// SlackMethods returns the Web API methods the tables cover, sorted.
func SlackMethods() []string {
	out := make([]string, 0, len(slackArgs))
	for m := range slackArgs {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Composition objects.

// slackText is a text object of either type, text of 1..max characters.
func slackText(maxLen int) *Shape {
	return union("text object", "type", slackTextDoc,
		&Shape{Name: "plain_text object", Doc: slackTextDoc, Fields: []Field{
			required(enum("type", slackTextDoc, "plain_text")),
			reqStr("text", 1, maxLen, slackTextDoc+" (text: 1–3000 characters, less where the holder says)"),
			boolean("emoji", slackTextDoc),
		}},
		&Shape{Name: "mrkdwn object", Doc: slackTextDoc, Fields: []Field{
			required(enum("type", slackTextDoc, "mrkdwn")),
			reqStr("text", 1, maxLen, slackTextDoc+" (text: 1–3000 characters, less where the holder says)"),
			boolean("verbatim", slackTextDoc),
		}})
}

// slackPlain is a plain_text object only (headers, button labels, titles), text of 1..max.
func slackPlain(maxLen int, doc string) *Shape {
	return union("plain_text object", "type", doc,
		&Shape{Name: "plain_text object", Doc: doc, Fields: []Field{
			required(enum("type", slackTextDoc, "plain_text")),
			reqStr("text", 1, maxLen, doc),
			boolean("emoji", slackTextDoc),
		}})
}

var slackConfirmShape = &Shape{Name: "confirmation dialog", Doc: slackConfirm, Fields: []Field{
	required(obj("title", slackPlain(100, slackConfirm+" (title: max 100 characters)"), slackConfirm)),
	required(obj("text", slackText(300), slackConfirm+" (text: max 300 characters)")),
	required(obj("confirm", slackPlain(30, slackConfirm+" (confirm: max 30 characters)"), slackConfirm)),
	required(obj("deny", slackPlain(30, slackConfirm+" (deny: max 30 characters)"), slackConfirm)),
	enum("style", slackConfirm, "primary", "danger"),
}}

// slackOption is an option object; plainOnly for selects and overflow menus (checkboxes and
// radio buttons take mrkdwn too).
func slackOption(plainOnly bool) *Shape {
	text := slackText(75)
	if plainOnly {
		text = slackPlain(75, slackOptionDoc+" (text: max 75 characters)")
	}
	return &Shape{Name: "option object", Doc: slackOptionDoc, Fields: []Field{
		required(obj("text", text, slackOptionDoc+" (text: max 75 characters)")),
		reqStr("value", 1, 150, slackOptionDoc+" (value: max 150 characters)"),
		obj("description", slackPlain(75, slackOptionDoc+" (description: max 75 characters)"), slackOptionDoc),
		str0("url", 3000, slackOptionDoc+" (url: max 3000 characters, overflow menus only)"),
	}}
}

func actionID() Field {
	return str0("action_id", 255, slackElemDoc+"button-element (action_id: max 255 characters, on every interactive element)")
}

// Block elements.

var slackButton = &Shape{Name: "button element", Doc: slackElemDoc + "button-element", Fields: []Field{
	required(enum("type", slackElemDoc+"button-element", "button")),
	required(obj("text", slackPlain(75, slackElemDoc+"button-element (text: plain_text, max 75 characters)"), slackElemDoc+"button-element")),
	actionID(),
	str0("url", 3000, slackElemDoc+"button-element (url: max 3000 characters)"),
	str0("value", 2000, slackElemDoc+"button-element (value: max 2000 characters)"),
	enum("style", slackElemDoc+"button-element (style: primary or danger)", "primary", "danger"),
	obj("confirm", slackConfirmShape, slackElemDoc+"button-element"),
	str0("accessibility_label", 75, slackElemDoc+"button-element (accessibility_label: max 75 characters)"),
}}

var slackCheckboxes = &Shape{Name: "checkboxes element", Doc: slackElemDoc + "checkboxes-element", Fields: []Field{
	required(enum("type", slackElemDoc+"checkboxes-element", "checkboxes")),
	actionID(),
	required(arr("options", 1, 10, of(slackOption(false)), slackElemDoc+"checkboxes-element (options: max 10)")),
	arr("initial_options", 0, 10, of(slackOption(false)), slackElemDoc+"checkboxes-element"),
	obj("confirm", slackConfirmShape, slackElemDoc+"checkboxes-element"),
	boolean("focus_on_load", slackElemDoc+"checkboxes-element"),
}}

var slackRadio = &Shape{Name: "radio buttons element", Doc: slackElemDoc + "radio-button-group-element", Fields: []Field{
	required(enum("type", slackElemDoc+"radio-button-group-element", "radio_buttons")),
	actionID(),
	required(arr("options", 1, 10, of(slackOption(false)), slackElemDoc+"radio-button-group-element (options: max 10)")),
	obj("initial_option", slackOption(false), slackElemDoc+"radio-button-group-element"),
	obj("confirm", slackConfirmShape, slackElemDoc+"radio-button-group-element"),
	boolean("focus_on_load", slackElemDoc+"radio-button-group-element"),
}}

var slackStaticSelect = &Shape{Name: "static select element", Doc: slackElemDoc + "select-menu-element#static_select",
	Fields: []Field{
		required(enum("type", slackElemDoc+"select-menu-element#static_select", "static_select")),
		actionID(),
		arr("options", 0, 100, of(slackOption(true)), slackElemDoc+"select-menu-element#static_select (options: max 100)"),
		arr("option_groups", 0, 100, nil, slackElemDoc+"select-menu-element#static_select (option_groups: max 100)"),
		obj("initial_option", slackOption(true), slackElemDoc+"select-menu-element#static_select"),
		obj("confirm", slackConfirmShape, slackElemDoc+"select-menu-element#static_select"),
		boolean("focus_on_load", slackElemDoc+"select-menu-element#static_select"),
		obj("placeholder", slackPlain(150, slackElemDoc+"select-menu-element#static_select (placeholder: max 150 characters)"), slackElemDoc+"select-menu-element#static_select"),
	},
	Rules: []Rule{
		oneOf(slackElemDoc+"select-menu-element#static_select (options or option_groups)", "options", "option_groups"),
		exclusive(slackElemDoc+"select-menu-element#static_select (options or option_groups)", "options", "option_groups"),
	}}

var slackOverflow = &Shape{Name: "overflow menu element", Doc: slackElemDoc + "overflow-menu-element", Fields: []Field{
	required(enum("type", slackElemDoc+"overflow-menu-element", "overflow")),
	actionID(),
	required(arr("options", 1, 5, of(slackOption(true)), slackElemDoc+"overflow-menu-element (options: 1–5)")),
	obj("confirm", slackConfirmShape, slackElemDoc+"overflow-menu-element"),
}}

var slackPlainInput = &Shape{Name: "plain-text input element", Doc: slackElemDoc + "plain-text-input-element", Fields: []Field{
	required(enum("type", slackElemDoc+"plain-text-input-element", "plain_text_input")),
	actionID(),
	str0("initial_value", 0, slackElemDoc+"plain-text-input-element"),
	boolean("multiline", slackElemDoc+"plain-text-input-element"),
	{Name: "min_length", Kind: Integer, MinSet: true, Min: 0, Max: 3000, Doc: slackElemDoc + "plain-text-input-element (min_length: max 3000)"},
	{Name: "max_length", Kind: Integer, Min: 1, Doc: slackElemDoc + "plain-text-input-element"},
	anyField("dispatch_action_config", slackElemDoc+"plain-text-input-element"),
	boolean("focus_on_load", slackElemDoc+"plain-text-input-element"),
	obj("placeholder", slackPlain(150, slackElemDoc+"plain-text-input-element (placeholder: max 150 characters)"), slackElemDoc+"plain-text-input-element"),
}}

var slackImageElem = &Shape{Name: "image element", Doc: slackElemDoc + "image-element", Fields: []Field{
	required(enum("type", slackElemDoc+"image-element", "image")),
	reqStr("alt_text", 1, 0, slackElemDoc+"image-element (alt_text: required)"),
	str0("image_url", 3000, slackElemDoc+"image-element (image_url: max 3000 characters)"),
	anyField("slack_file", slackElemDoc+"image-element"),
}, Rules: []Rule{oneOf(slackElemDoc+"image-element (image_url or slack_file)", "image_url", "slack_file")}}

// Blocks.

func blockID(block string) Field {
	return str0("block_id", 255, slackBlockDoc+block+" (block_id: max 255 characters)")
}

var slackSection = &Shape{Name: "section block", Doc: slackBlockDoc + "section-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"section-block", "section")),
	obj("text", slackText(3000), slackBlockDoc+"section-block (text: max 3000 characters)"),
	blockID("section-block"),
	arr("fields", 1, 10, of(slackText(2000)), slackBlockDoc+"section-block (fields: max 10 items, 2000 characters each)"),
	{Name: "accessory", Kind: Object, Doc: slackBlockDoc + "section-block (accessory: a block element)",
		Shape: union("section accessory", "type", slackBlockDoc+"section-block (accessory: a block element)",
			slackButton, slackCheckboxes, slackRadio, slackStaticSelect, slackOverflow, slackImageElem)},
	boolean("expand", slackBlockDoc+"section-block"),
}, Rules: []Rule{oneOf(slackBlockDoc+"section-block (text required unless fields)", "text", "fields")}}

var slackHeader = &Shape{Name: "header block", Doc: slackBlockDoc + "header-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"header-block", "header")),
	required(obj("text", slackPlain(150, slackBlockDoc+"header-block (text: plain_text, max 150 characters)"), slackBlockDoc+"header-block")),
	blockID("header-block"),
}}

var slackDivider = &Shape{Name: "divider block", Doc: slackBlockDoc + "divider-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"divider-block", "divider")),
	blockID("divider-block"),
}}

var slackContext = &Shape{Name: "context block", Doc: slackBlockDoc + "context-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"context-block", "context")),
	required(arr("elements", 1, 10, of(union("context element", "type",
		slackBlockDoc+"context-block (elements: images and text objects)",
		slackImageElem, slackText(3000).Variants["plain_text"], slackText(3000).Variants["mrkdwn"])),
		slackBlockDoc+"context-block (elements: max 10)")),
	blockID("context-block"),
}}

var slackActions = &Shape{Name: "actions block", Doc: slackBlockDoc + "actions-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"actions-block", "actions")),
	required(arr("elements", 1, 25, of(union("actions element", "type",
		slackBlockDoc+"actions-block (elements: interactive elements)",
		slackButton, slackCheckboxes, slackRadio, slackStaticSelect, slackOverflow)),
		slackBlockDoc+"actions-block (elements: max 25)")),
	blockID("actions-block"),
}}

var slackMarkdown = &Shape{Name: "markdown block", Doc: slackBlockDoc + "markdown-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"markdown-block", "markdown")),
	reqStr("text", 1, 12000, slackBlockDoc+"markdown-block (text: max 12,000 characters per payload)"),
	blockID("markdown-block"),
}}

// The rich text block's elements are a format of their own; only its frame is checked.
var slackRichText = &Shape{Name: "rich text block", Doc: slackBlockDoc + "rich-text-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"rich-text-block", "rich_text")),
	required(arr("elements", 0, 0, nil, slackBlockDoc+"rich-text-block")),
	blockID("rich-text-block"),
}}

var slackImageBlock = &Shape{Name: "image block", Doc: slackBlockDoc + "image-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"image-block", "image")),
	reqStr("alt_text", 1, 2000, slackBlockDoc+"image-block (alt_text: max 2000 characters)"),
	str0("image_url", 3000, slackBlockDoc+"image-block (image_url: max 3000 characters)"),
	anyField("slack_file", slackBlockDoc+"image-block"),
	obj("title", slackPlain(2000, slackBlockDoc+"image-block (title: max 2000 characters)"), slackBlockDoc+"image-block"),
	blockID("image-block"),
}, Rules: []Rule{oneOf(slackBlockDoc+"image-block (image_url or slack_file)", "image_url", "slack_file")}}

var slackInput = &Shape{Name: "input block", Doc: slackBlockDoc + "input-block", Fields: []Field{
	required(enum("type", slackBlockDoc+"input-block", "input")),
	required(obj("label", slackPlain(2000, slackBlockDoc+"input-block (label: plain_text, max 2000 characters)"), slackBlockDoc+"input-block")),
	required(Field{Name: "element", Kind: Object, Doc: slackBlockDoc + "input-block (element: an input element)",
		Shape: union("input element", "type", slackBlockDoc+"input-block (element: an input element)",
			slackPlainInput, slackCheckboxes, slackRadio, slackStaticSelect)}),
	boolean("dispatch_action", slackBlockDoc+"input-block"),
	blockID("input-block"),
	obj("hint", slackPlain(2000, slackBlockDoc+"input-block (hint: max 2000 characters)"), slackBlockDoc+"input-block"),
	boolean("optional", slackBlockDoc+"input-block"),
}}

// slackBlocks are the blocks a message or a modal takes (input blocks are for modals; messages
// take them only with dispatch_action, which the adapter does not use).
var (
	slackMessageBlock = union("message block", "type", "https://docs.slack.dev/reference/block-kit/blocks",
		slackSection, slackHeader, slackDivider, slackContext, slackActions, slackMarkdown, slackRichText, slackImageBlock)
	slackModalBlock = union("modal block", "type", "https://docs.slack.dev/reference/block-kit/blocks",
		slackSection, slackHeader, slackDivider, slackContext, slackActions, slackMarkdown, slackRichText, slackImageBlock, slackInput)
)

func slackMessageBlocks(method string) Field {
	return arr("blocks", 0, 50, of(slackMessageBlock), slackMethodDoc+method+" (blocks: max 50 blocks per message)")
}

var slackModal = &Shape{Name: "modal view", Doc: slackModalDoc, Fields: []Field{
	required(enum("type", slackModalDoc, "modal")),
	required(obj("title", slackPlain(24, slackModalDoc+" (title: plain_text, max 24 characters)"), slackModalDoc)),
	required(arr("blocks", 0, 100, of(slackModalBlock), slackModalDoc+" (blocks: max 100)")),
	obj("close", slackPlain(24, slackModalDoc+" (close: plain_text, max 24 characters)"), slackModalDoc),
	obj("submit", slackPlain(24, slackModalDoc+" (submit: plain_text, max 24 characters)"), slackModalDoc),
	str0("private_metadata", 3000, slackModalDoc+" (private_metadata: max 3000 characters)"),
	str0("callback_id", 255, slackModalDoc+" (callback_id: max 255 characters)"),
	boolean("clear_on_close", slackModalDoc),
	boolean("notify_on_close", slackModalDoc),
	str0("external_id", 0, slackModalDoc),
	boolean("submit_disabled", slackModalDoc),
}, Rules: []Rule{{Kind: RuleRequired, Doc: slackModalDoc + " (submit is required when an input block is within the blocks array)",
	Check: func(o map[string]any, report func(string, string)) {
		if present(o, "submit") {
			return
		}
		for _, b := range items(o, "blocks") {
			if str(object(b), "type") == "input" {
				report("submit", "missing: the modal has an input block")
				return
			}
		}
	}}}}

// Streaming chunks (chat.startStream / appendStream / stopStream).
var slackChunk = union("chunk", "type", slackStreamDoc+" (chunks)",
	&Shape{Name: "markdown_text chunk", Doc: slackStreamDoc, Fields: []Field{
		required(enum("type", slackStreamDoc, "markdown_text")),
		reqStr("text", 1, 12000, slackStreamDoc+" (markdown_text: max 12,000 characters)"),
	}},
	&Shape{Name: "task_update chunk", Doc: slackStreamDoc, Fields: []Field{
		required(enum("type", slackStreamDoc, "task_update")),
		reqStr("id", 1, 0, slackStreamDoc),
		reqStr("title", 1, 0, slackStreamDoc),
		required(enum("status", slackStreamDoc+" (status: pending, in_progress, complete, error)", "pending", "in_progress", "complete", "error")),
		str0("details", 256, slackStreamDoc+" (details: max 256 characters)"),
		str0("output", 256, slackStreamDoc+" (output: max 256 characters)"),
		anyField("sources", slackStreamDoc),
	}},
	&Shape{Name: "plan_update chunk", Doc: slackStreamDoc, Fields: []Field{
		required(enum("type", slackStreamDoc, "plan_update")),
		reqStr("title", 1, 0, slackStreamDoc),
	}},
	&Shape{Name: "blocks chunk", Doc: slackStreamDoc, Fields: []Field{
		required(enum("type", slackStreamDoc, "blocks")),
		required(arr("blocks", 1, 50, of(slackMessageBlock), slackStreamDoc)),
	}},
)

func slackChunks(method string) Field {
	return arr("chunks", 0, 0, of(slackChunk), slackMethodDoc+method+" (chunks)")
}

// slackMethod is the body rule of method: its documented arguments (and the token), the typed
// ones as given, the rest of any type.
func slackMethod(method string, typed []Field, rules ...Rule) *Field {
	doc := slackMethodDoc + method
	s := &Shape{Name: method + " arguments", Doc: doc, Rules: rules}
	s.Fields = append(s.Fields, typed...)
	for _, a := range append(slices.Clone(slackArgs[method]), "token") {
		if !s.has(a) {
			s.Fields = append(s.Fields, anyField(a, doc))
		}
	}
	return &Field{Kind: Object, Shape: s, Doc: doc}
}

func slackReq(method, name string) Field {
	return Field{Name: name, Kind: String, Required: true, Min: 1, Doc: slackMethodDoc + method + " (" + name + ": required)"}
}

var slackMethods = map[string]*Field{
	"auth.test":             slackMethod("auth.test", nil),
	"apps.connections.open": slackMethod("apps.connections.open", nil),
	"oauth.v2.access":       slackMethod("oauth.v2.access", nil),
	"chat.postMessage": slackMethod("chat.postMessage", []Field{
		slackReq("chat.postMessage", "channel"),
		str0("text", 40000, slackMethodDoc+"chat.postMessage (text: truncated past 40,000 characters)"),
		slackMessageBlocks("chat.postMessage"),
		str0("markdown_text", 12000, slackMethodDoc+"chat.postMessage (markdown_text: max 12,000 characters)"),
		str0("thread_ts", 0, slackMethodDoc+"chat.postMessage"),
		boolean("unfurl_links", slackMethodDoc+"chat.postMessage"),
		boolean("unfurl_media", slackMethodDoc+"chat.postMessage"),
		boolean("reply_broadcast", slackMethodDoc+"chat.postMessage"),
		boolean("mrkdwn", slackMethodDoc+"chat.postMessage"),
		obj("metadata", nil, slackMethodDoc+"chat.postMessage"),
	},
		oneOf(slackMethodDoc+"chat.postMessage (one of attachments, blocks, text or markdown_text is required)",
			"text", "blocks", "attachments", "markdown_text"),
		exclusive(slackMethodDoc+"chat.postMessage (markdown_text cannot be used with blocks or text)", "markdown_text", "blocks"),
		exclusive(slackMethodDoc+"chat.postMessage (markdown_text cannot be used with blocks or text)", "markdown_text", "text")),
	"chat.update": slackMethod("chat.update", []Field{
		slackReq("chat.update", "channel"),
		slackReq("chat.update", "ts"),
		str0("text", 40000, slackMethodDoc+"chat.update (text: truncated past 40,000 characters)"),
		slackMessageBlocks("chat.update"),
		str0("markdown_text", 12000, slackMethodDoc+"chat.update (markdown_text: max 12,000 characters)"),
		obj("metadata", nil, slackMethodDoc+"chat.update"),
	}),
	"chat.delete": slackMethod("chat.delete", []Field{slackReq("chat.delete", "channel"), slackReq("chat.delete", "ts")}),
	"chat.postEphemeral": slackMethod("chat.postEphemeral", []Field{
		slackReq("chat.postEphemeral", "channel"),
		slackReq("chat.postEphemeral", "user"),
		str0("text", 40000, slackMethodDoc+"chat.postEphemeral"),
		slackMessageBlocks("chat.postEphemeral"),
	}, oneOf(slackMethodDoc+"chat.postEphemeral (one of attachments, blocks, text or markdown_text is required)",
		"text", "blocks", "attachments", "markdown_text")),
	"chat.startStream": slackMethod("chat.startStream", []Field{
		slackReq("chat.startStream", "channel"),
		slackReq("chat.startStream", "thread_ts"),
		str0("markdown_text", 12000, slackMethodDoc+"chat.startStream (markdown_text: max 12,000 characters)"),
		slackChunks("chat.startStream"),
		enum("task_display_mode", slackMethodDoc+"chat.startStream (task_display_mode: timeline or plan)", "timeline", "plan"),
	}),
	"chat.appendStream": slackMethod("chat.appendStream", []Field{
		slackReq("chat.appendStream", "channel"),
		slackReq("chat.appendStream", "ts"),
		str0("markdown_text", 12000, slackMethodDoc+"chat.appendStream (markdown_text: max 12,000 characters)"),
		slackChunks("chat.appendStream"),
	}, oneOf(slackMethodDoc+"chat.appendStream (markdown_text or chunks is required)", "markdown_text", "chunks")),
	"chat.stopStream": slackMethod("chat.stopStream", []Field{
		slackReq("chat.stopStream", "channel"),
		slackReq("chat.stopStream", "ts"),
		str0("markdown_text", 12000, slackMethodDoc+"chat.stopStream (markdown_text: max 12,000 characters)"),
		slackChunks("chat.stopStream"),
		slackMessageBlocks("chat.stopStream"),
		obj("metadata", nil, slackMethodDoc+"chat.stopStream"),
	}),
	"assistant.threads.setStatus": slackMethod("assistant.threads.setStatus", []Field{
		slackReq("assistant.threads.setStatus", "channel_id"),
		slackReq("assistant.threads.setStatus", "thread_ts"),
		// status is required but may be empty: "" clears the status.
		required(str0("status", 0, slackMethodDoc+"assistant.threads.setStatus (status: required; empty clears it)")),
		arr("loading_messages", 0, 10, &Field{Kind: String}, slackMethodDoc+"assistant.threads.setStatus (loading_messages: max 10)"),
	}),
	"assistant.threads.setSuggestedPrompts": slackMethod("assistant.threads.setSuggestedPrompts", []Field{
		slackReq("assistant.threads.setSuggestedPrompts", "channel_id"),
		required(arr("prompts", 1, 4, of(&Shape{Name: "prompt", Doc: slackMethodDoc + "assistant.threads.setSuggestedPrompts",
			Fields: []Field{
				reqStr("title", 1, 0, slackMethodDoc+"assistant.threads.setSuggestedPrompts (prompts: title and message)"),
				reqStr("message", 1, 0, slackMethodDoc+"assistant.threads.setSuggestedPrompts (prompts: title and message)"),
			}}), slackMethodDoc+"assistant.threads.setSuggestedPrompts (prompts: max 4)")),
		str0("title", 0, slackMethodDoc+"assistant.threads.setSuggestedPrompts"),
	}),
	"assistant.threads.setTitle": slackMethod("assistant.threads.setTitle", []Field{
		slackReq("assistant.threads.setTitle", "channel_id"),
		slackReq("assistant.threads.setTitle", "thread_ts"),
		slackReq("assistant.threads.setTitle", "title"),
	}),
	"files.getUploadURLExternal": slackMethod("files.getUploadURLExternal", []Field{
		slackReq("files.getUploadURLExternal", "filename"),
		required(Field{Name: "length", Kind: Integer, Min: 1, Doc: slackMethodDoc + "files.getUploadURLExternal (length: required, in bytes)"}),
	}),
	"files.completeUploadExternal": slackMethod("files.completeUploadExternal", []Field{
		required(arr("files", 1, 0, of(&Shape{Name: "file", Doc: slackMethodDoc + "files.completeUploadExternal", Fields: []Field{
			reqStr("id", 1, 0, slackMethodDoc+"files.completeUploadExternal (files: id required, title optional)"),
			str0("title", 0, slackMethodDoc+"files.completeUploadExternal"),
		}}), slackMethodDoc+"files.completeUploadExternal (files: required)")),
		slackMessageBlocks("files.completeUploadExternal"),
	}, exclusive(slackMethodDoc+"files.completeUploadExternal (channel_id or channels)", "channel_id", "channels")),
	"conversations.history": slackMethod("conversations.history", []Field{
		slackReq("conversations.history", "channel"),
		{Name: "limit", Kind: Integer, Max: 999, Doc: slackMethodDoc + "conversations.history (limit: max 999)"},
	}),
	"conversations.replies": slackMethod("conversations.replies", []Field{
		slackReq("conversations.replies", "channel"),
		slackReq("conversations.replies", "ts"),
		{Name: "limit", Kind: Integer, Max: 1000, Doc: slackMethodDoc + "conversations.replies (limit: max 1000)"},
	}),
	"views.open": slackMethod("views.open", []Field{
		required(obj("view", slackModal, slackMethodDoc+"views.open (view: required)")),
	}, oneOf(slackMethodDoc+"views.open (trigger_id or interactivity_pointer is required)", "trigger_id", "interactivity_pointer")),
}
