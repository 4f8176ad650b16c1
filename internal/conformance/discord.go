package conformance

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Discord's rules: each REST route the adapter calls (API v9; keys are "VERB /route" with the
// fake's path parameters), the message, embed and interaction-response bodies, and the
// components (components/reference), with what may nest where for legacy messages, Components V2
// messages and modals. Discord counts characters. Checked against the documentation in December
// 2026.

const (
	dDocs          = "https://discord.com/developers/docs/"
	dCreateMessage = dDocs + "resources/message#create-message"
	dEditMessage   = dDocs + "resources/message#edit-message"
	dEmbed         = dDocs + "resources/message#embed-object"
	dEmbedLimits   = dDocs + "resources/message#embed-object-embed-limits"
	dMentions      = dDocs + "resources/message#allowed-mentions-object"
	dReference     = dDocs + "resources/message#message-reference-structure"
	dComp          = dDocs + "components/reference"
	dCompTypes     = dComp + "#component-object-component-types"
	dResponse      = dDocs + "interactions/receiving-and-responding#interaction-response-object"
	dCallbackTypes = dResponse + "-interaction-callback-type"
	dRespMessages  = dResponse + "-messages"
	dRespModal     = dResponse + "-modal"
	dFollowup      = dDocs + "interactions/receiving-and-responding#create-followup-message"
	dEditFollowup  = dDocs + "interactions/receiving-and-responding#edit-followup-message"
	dThread        = dDocs + "resources/channel#start-thread-from-message"
	dCommands      = dDocs + "interactions/application-commands#bulk-overwrite-global-application-commands"
	dCommand       = dDocs + "interactions/application-commands#application-command-object-application-command-structure"
	dOption        = dDocs + "interactions/application-commands#application-command-object-application-command-option-structure"
	dCreateDM      = dDocs + "resources/user#create-dm"
	dFlags         = dDocs + "resources/message#message-object-message-flags"
)

// Discord's component type numbers (Component Reference: Component Types).
const (
	dActionRow   = 1
	dButton      = 2
	dStringSel   = 3
	dTextInput   = 4
	dSection     = 9
	dTextDisplay = 10
	dThumbnail   = 11
	dGallery     = 12
	dFile        = 13
	dSeparator   = 14
	dContainer   = 17
	dLabel       = 18
)

// dFlagComponentsV2 is the message flag IS_COMPONENTS_V2 (1 << 15).
const dFlagComponentsV2 = 1 << 15

func dType(doc string, t int) Field {
	return required(intEnum("type", doc, strconv.Itoa(t)))
}

func customID(doc string) Field {
	return reqStr("custom_id", 1, 100, doc+" (custom_id: 1–100 characters)")
}

func compID(doc string) Field { return integer("id", doc+" (id: optional identifier)") }

var dEmoji = &Shape{Name: "partial emoji", Doc: dComp + "#button", Open: true}

var dButtonShape = &Shape{Name: "button", Doc: dComp + "#button", Fields: []Field{
	dType(dComp+"#button", dButton),
	compID(dComp + "#button"),
	required(intEnum("style", dComp+"#button-button-styles (style: 1–6)", "1", "2", "3", "4", "5", "6")),
	str0("label", 80, dComp+"#button (label: max 80 characters)"),
	obj("emoji", dEmoji, dComp+"#button"),
	str0("custom_id", 100, dComp+"#button (custom_id: max 100 characters)"),
	str0("sku_id", 0, dComp+"#button"),
	str0("url", 512, dComp+"#button (url: max 512 characters)"),
	boolean("disabled", dComp+"#button"),
}, Rules: []Rule{{Kind: RuleStructure, Doc: dComp + "#button (non-link and non-premium buttons need a custom_id; link buttons a url and no custom_id)",
	Check: func(o map[string]any, report func(string, string)) {
		style, _ := asInt(o["style"])
		switch style {
		case 5:
			if !present(o, "url") {
				report("url", "missing: a link button needs a url")
			}
			if present(o, "custom_id") {
				report("custom_id", "a link button cannot have a custom_id")
			}
		case 6:
			if !present(o, "sku_id") {
				report("sku_id", "missing: a premium button needs a sku_id")
			}
		case 1, 2, 3, 4:
			if str(o, "custom_id") == "" {
				report("custom_id", "missing: a button of style 1–4 needs a custom_id")
			}
			if present(o, "url") {
				report("url", "only a link button has a url")
			}
		}
	}}}}

var dSelectOption = &Shape{Name: "select option", Doc: dComp + "#string-select-select-option-structure", Fields: []Field{
	reqStr("label", 1, 100, dComp+"#string-select-select-option-structure (label: max 100 characters)"),
	reqStr("value", 1, 100, dComp+"#string-select-select-option-structure (value: max 100 characters)"),
	str0("description", 100, dComp+"#string-select-select-option-structure (description: max 100 characters)"),
	obj("emoji", dEmoji, dComp+"#string-select-select-option-structure"),
	boolean("default", dComp+"#string-select-select-option-structure"),
}}

var dStringSelect = &Shape{Name: "string select", Doc: dComp + "#string-select", Fields: []Field{
	dType(dComp+"#string-select", dStringSel),
	compID(dComp + "#string-select"),
	customID(dComp + "#string-select"),
	required(arr("options", 1, 25, of(dSelectOption), dComp+"#string-select (options: max 25)")),
	str0("placeholder", 150, dComp+"#string-select (placeholder: max 150 characters)"),
	{Name: "min_values", Kind: Integer, MinSet: true, Min: 0, Max: 25, Doc: dComp + "#string-select (min_values: 0–25)"},
	{Name: "max_values", Kind: Integer, Min: 1, Max: 25, Doc: dComp + "#string-select (max_values: 1–25)"},
	boolean("required", dComp+"#string-select (required: in modals)"),
	boolean("disabled", dComp+"#string-select"),
}}

func dTextInputShape(inLabel bool) *Shape {
	doc := dComp + "#text-input"
	fields := []Field{
		dType(doc, dTextInput),
		compID(doc),
		customID(doc),
		required(intEnum("style", doc+"-text-input-styles (style: 1 short, 2 paragraph)", "1", "2")),
		{Name: "min_length", Kind: Integer, MinSet: true, Min: 0, Max: 4000, Doc: doc + " (min_length: 0–4000)"},
		{Name: "max_length", Kind: Integer, Min: 1, Max: 4000, Doc: doc + " (max_length: 1–4000)"},
		boolean("required", doc),
		str0("value", 4000, doc+" (value: max 4000 characters)"),
		str0("placeholder", 100, doc+" (placeholder: max 100 characters)"),
	}
	if !inLabel {
		// Text inputs in action rows (deprecated) carry their own label; inside a label
		// component the label is the label's.
		fields = append(fields, reqStr("label", 1, 45, doc+" (label: max 45 characters; deprecated, use a label component)"))
	}
	return &Shape{Name: "text input", Doc: doc, Fields: fields}
}

var dTextDisplayShape = &Shape{Name: "text display", Doc: dComp + "#text-display", Fields: []Field{
	dType(dComp+"#text-display", dTextDisplay),
	compID(dComp + "#text-display"),
	reqStr("content", 1, 0, dComp+"#text-display (content: required)"),
}}

var dMedia = &Shape{Name: "unfurled media item", Doc: dComp + "#unfurled-media-item", Open: true, Fields: []Field{
	reqStr("url", 1, 0, dComp+"#unfurled-media-item (url: required)"),
}}

var dThumbnailShape = &Shape{Name: "thumbnail", Doc: dComp + "#thumbnail", Fields: []Field{
	dType(dComp+"#thumbnail", dThumbnail),
	compID(dComp + "#thumbnail"),
	required(obj("media", dMedia, dComp+"#thumbnail (media: required)")),
	str0("description", 1024, dComp+"#thumbnail (description: max 1024 characters)"),
	boolean("spoiler", dComp+"#thumbnail"),
}}

var dSectionShape = &Shape{Name: "section", Doc: dComp + "#section", Fields: []Field{
	dType(dComp+"#section", dSection),
	compID(dComp + "#section"),
	required(arr("components", 1, 3, of(union("section child", "type", dComp+"#section (components: 1–3 text displays)",
		dTextDisplayShape)), dComp+"#section (components: 1–3 text displays)")),
	required(Field{Name: "accessory", Kind: Object, Doc: dComp + "#section (accessory: a button or a thumbnail)",
		Shape: union("section accessory", "type", dComp+"#section (accessory: a button or a thumbnail)", dButtonShape, dThumbnailShape)}),
}}

var dGalleryShape = &Shape{Name: "media gallery", Doc: dComp + "#media-gallery", Fields: []Field{
	dType(dComp+"#media-gallery", dGallery),
	compID(dComp + "#media-gallery"),
	required(arr("items", 1, 10, of(&Shape{Name: "media gallery item", Doc: dComp + "#media-gallery-media-gallery-item-structure", Fields: []Field{
		required(obj("media", dMedia, dComp+"#media-gallery-media-gallery-item-structure")),
		str0("description", 1024, dComp+"#media-gallery-media-gallery-item-structure (description: max 1024 characters)"),
		boolean("spoiler", dComp+"#media-gallery-media-gallery-item-structure"),
	}}), dComp+"#media-gallery (items: 1–10)")),
}}

var dFileShape = &Shape{Name: "file", Doc: dComp + "#file", Fields: []Field{
	dType(dComp+"#file", dFile),
	compID(dComp + "#file"),
	required(obj("file", dMedia, dComp+"#file (file: an attachment:// reference)")),
	boolean("spoiler", dComp+"#file"),
}}

var dSeparatorShape = &Shape{Name: "separator", Doc: dComp + "#separator", Fields: []Field{
	dType(dComp+"#separator", dSeparator),
	compID(dComp + "#separator"),
	boolean("divider", dComp+"#separator"),
	intEnum("spacing", dComp+"#separator (spacing: 1 small, 2 large)", "1", "2"),
}}

// Auto-populated selects (user, role, mentionable, channel: types 5–8); the adapter sends none,
// so only their frame is checked.
func dAutoSelect(t int) *Shape {
	return &Shape{Name: "select", Doc: dComp + "#user-select", Open: true, Fields: []Field{
		dType(dComp+"#user-select", t), customID(dComp + "#user-select"),
	}}
}

// actionRowRule: an action row holds up to 5 buttons, or exactly one select.
var actionRowRule = Rule{Kind: RuleStructure, Doc: dComp + "#action-row (up to 5 buttons, or a single select)",
	Check: func(o map[string]any, report func(string, string)) {
		cs := items(o, "components")
		for i, c := range cs {
			t, _ := asInt(object(c)["type"])
			if t != dButton && len(cs) > 1 {
				report(fmt.Sprintf("components[%d]", i), fmt.Sprintf("a component of type %d must be alone in its action row", t))
			}
		}
	}}

var dActionRowMessage = &Shape{Name: "action row", Doc: dComp + "#action-row", Fields: []Field{
	dType(dComp+"#action-row", dActionRow),
	compID(dComp + "#action-row"),
	required(arr("components", 1, 5, of(union("action row child", "type", dComp+"#action-row (buttons or one select)",
		dButtonShape, dStringSelect, dAutoSelect(5), dAutoSelect(6), dAutoSelect(7), dAutoSelect(8))),
		dComp+"#action-row (components: 1–5)")),
}, Rules: []Rule{actionRowRule}}

var dActionRowModal = &Shape{Name: "modal action row", Doc: dComp + "#action-row", Fields: []Field{
	dType(dComp+"#action-row", dActionRow),
	compID(dComp + "#action-row"),
	required(arr("components", 1, 1, of(union("modal action row child", "type", dComp+"#text-input (in a modal, an action row holds one text input; deprecated)",
		dTextInputShape(false))), dComp+"#action-row (in a modal: one text input)")),
}}

var dContainerShape = &Shape{Name: "container", Doc: dComp + "#container", Fields: []Field{
	dType(dComp+"#container", dContainer),
	compID(dComp + "#container"),
	required(arr("components", 1, 0, of(union("container child", "type",
		dComp+"#container (components: action rows, text displays, sections, media galleries, separators, files)",
		dActionRowMessage, dTextDisplayShape, dSectionShape, dGalleryShape, dSeparatorShape, dFileShape)),
		dComp+"#container (components: required)")),
	{Name: "accent_color", Kind: Integer, MinSet: true, Min: 0, Max: 0xFFFFFF, Doc: dComp + "#container (accent_color: RGB 0x000000–0xFFFFFF)"},
	boolean("spoiler", dComp+"#container"),
}}

// dTopComponent is what a message's components array may hold; which of these a message takes
// depends on its IS_COMPONENTS_V2 flag (dMessageComponents).
var dTopComponent = union("message component", "type", dCompTypes,
	dActionRowMessage, dSectionShape, dTextDisplayShape, dGalleryShape, dFileShape, dSeparatorShape, dContainerShape)

// Modal children (Receiving and Responding: Modal; Component Reference: Label).
var dLabelShape = &Shape{Name: "label", Doc: dComp + "#label", Fields: []Field{
	dType(dComp+"#label", dLabel),
	compID(dComp + "#label"),
	reqStr("label", 1, 45, dComp+"#label (label: max 45 characters)"),
	str0("description", 100, dComp+"#label (description: max 100 characters)"),
	required(Field{Name: "component", Kind: Object, Doc: dComp + "#label (component: a text input, select, file upload, radio group, checkbox group or checkbox)",
		Shape: union("label child", "type", dComp+"#label (component: a text input, select, file upload, radio group, checkbox group or checkbox)",
			dTextInputShape(true), dStringSelect, dAutoSelect(5), dAutoSelect(6), dAutoSelect(7), dAutoSelect(8),
			dOpenInput(19, "#file-upload"), dOpenInput(21, "#radio-group"), dOpenInput(22, "#checkbox-group"), dOpenInput(23, "#checkbox"))}),
}}

// dOpenInput is a modal input the adapter does not build (file upload, radio group, checkbox
// group, checkbox): its type and custom_id are checked, the rest is open.
func dOpenInput(t int, anchor string) *Shape {
	return &Shape{Name: "modal input", Doc: dComp + anchor, Open: true, Fields: []Field{
		dType(dComp+anchor, t), customID(dComp + anchor),
	}}
}

var dModalChild = union("modal component", "type", dRespModal+" (components: labels, text displays, or action rows of one text input)",
	dLabelShape, dTextDisplayShape, dActionRowModal)

// Embeds.

var dEmbedShape = &Shape{Name: "embed", Doc: dEmbed, Fields: []Field{
	str0("title", 256, dEmbedLimits+" (title: 256 characters)"),
	enum("type", dEmbed+"-embed-types (rich for bots)", "rich"),
	str0("description", 4096, dEmbedLimits+" (description: 4096 characters)"),
	str0("url", 0, dEmbed),
	str0("timestamp", 0, dEmbed),
	{Name: "color", Kind: Integer, MinSet: true, Min: 0, Max: 0xFFFFFF, Doc: dEmbed + " (color: an RGB integer)"},
	obj("footer", &Shape{Name: "embed footer", Doc: dEmbed + "-embed-footer-structure", Fields: []Field{
		reqStr("text", 1, 2048, dEmbedLimits+" (footer.text: 2048 characters)"),
		str0("icon_url", 0, dEmbed+"-embed-footer-structure"),
	}}, dEmbed),
	obj("image", &Shape{Name: "embed image", Doc: dEmbed + "-embed-image-structure", Open: true}, dEmbed),
	obj("thumbnail", &Shape{Name: "embed thumbnail", Doc: dEmbed + "-embed-thumbnail-structure", Open: true}, dEmbed),
	obj("author", &Shape{Name: "embed author", Doc: dEmbed + "-embed-author-structure", Fields: []Field{
		reqStr("name", 1, 256, dEmbedLimits+" (author.name: 256 characters)"),
		str0("url", 0, dEmbed+"-embed-author-structure"),
		str0("icon_url", 0, dEmbed+"-embed-author-structure"),
	}}, dEmbed),
	arr("fields", 0, 25, of(&Shape{Name: "embed field", Doc: dEmbed + "-embed-field-structure", Fields: []Field{
		reqStr("name", 1, 256, dEmbedLimits+" (field.name: 256 characters)"),
		reqStr("value", 1, 1024, dEmbedLimits+" (field.value: 1024 characters)"),
		boolean("inline", dEmbed+"-embed-field-structure"),
	}}), dEmbedLimits+" (fields: up to 25 field objects)"),
}}

// embedTotal: the characters of every embed's title, description, field names and values,
// footer text and author name, together, at most 6000.
var embedTotal = Rule{Kind: RuleLength, Doc: dEmbedLimits + " (6000 characters in all embeds of a message)",
	Check: func(o map[string]any, report func(string, string)) {
		total := 0
		for _, e := range items(o, "embeds") {
			em := object(e)
			total += utf8.RuneCountInString(str(em, "title")) + utf8.RuneCountInString(str(em, "description"))
			total += utf8.RuneCountInString(str(object(em["footer"]), "text")) + utf8.RuneCountInString(str(object(em["author"]), "name"))
			for _, f := range items(em, "fields") {
				total += utf8.RuneCountInString(str(object(f), "name")) + utf8.RuneCountInString(str(object(f), "value"))
			}
		}
		if total > 6000 {
			report("embeds", fmt.Sprintf("has %d characters in all, more than 6000", total))
		}
	}}

// dMessageComponents: without IS_COMPONENTS_V2 a message holds up to 5 action rows; with it, up
// to 40 components counted with the nested ones, 4000 characters of text displays, and no
// content, embeds, poll or stickers.
var dMessageComponents = Rule{Kind: RuleStructure, Doc: dFlags + " (IS_COMPONENTS_V2: up to 40 components, no content or embeds; without it, up to 5 action rows: " + dComp + "#action-row)",
	Check: func(o map[string]any, report func(string, string)) {
		flags, _ := asInt(o["flags"])
		cs := items(o, "components")
		if flags&dFlagComponentsV2 == 0 {
			if len(cs) > 5 {
				report("components", fmt.Sprintf("has %d action rows, more than 5", len(cs)))
			}
			for i, c := range cs {
				if t, _ := asInt(object(c)["type"]); t != dActionRow {
					report(fmt.Sprintf("components[%d].type", i), fmt.Sprintf("component type %d needs the IS_COMPONENTS_V2 flag", t))
				}
			}
			return
		}
		for _, f := range []string{"content", "embeds", "poll", "sticker_ids"} {
			if v, ok := o[f]; ok && v != nil && !emptyValue(v) {
				report(f, "not allowed with the IS_COMPONENTS_V2 flag")
			}
		}
		n, text := countComponents(cs)
		if n > 40 {
			report("components", fmt.Sprintf("has %d components with the nested ones, more than 40", n))
		}
		if text > 4000 {
			report("components", fmt.Sprintf("has %d characters of text displays, more than 4000", text))
		}
	}}

func emptyValue(v any) bool {
	switch v := decoded(v).(type) {
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	}
	return false
}

func countComponents(cs []any) (n, text int) {
	for _, c := range cs {
		o := object(c)
		if o == nil {
			continue
		}
		n++
		if t, _ := asInt(o["type"]); t == dTextDisplay {
			text += utf8.RuneCountInString(str(o, "content"))
		}
		kn, kt := countComponents(items(o, "components"))
		n, text = n+kn, text+kt
		if acc := object(o["accessory"]); acc != nil {
			an, at := countComponents([]any{acc})
			n, text = n+an, text+at
		}
	}
	return n, text
}

var dMentionsShape = &Shape{Name: "allowed mentions", Doc: dMentions, Fields: []Field{
	arr("parse", 0, 0, &Field{Kind: String, Enum: []string{"roles", "users", "everyone"}, Doc: dMentions + "-allowed-mention-types"}, dMentions),
	arr("roles", 0, 100, &Field{Kind: String}, dMentions+" (roles: max 100)"),
	arr("users", 0, 100, &Field{Kind: String}, dMentions+" (users: max 100)"),
	boolean("replied_user", dMentions),
}}

var dReferenceShape = &Shape{Name: "message reference", Doc: dReference, Fields: []Field{
	intEnum("type", dReference+" (type: 0 default, 1 forward)", "0", "1"),
	str0("message_id", 0, dReference),
	str0("channel_id", 0, dReference),
	str0("guild_id", 0, dReference),
	boolean("fail_if_not_exists", dReference),
}}

// dMessageFields are the fields of a message body shared by the routes that take one.
func dMessageFields(doc string) []Field {
	return []Field{
		str0("content", 2000, doc+" (content: up to 2000 characters)"),
		boolean("tts", doc),
		arr("embeds", 0, 10, of(dEmbedShape), doc+" (embeds: up to 10 rich embeds, 6000 characters in all)"),
		obj("allowed_mentions", dMentionsShape, doc),
		arr("components", 0, 0, of(dTopComponent), doc+" (components)"),
		arr("attachments", 0, 0, nil, doc),
		integer("flags", doc+" (flags: SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_COMPONENTS_V2, EPHEMERAL where allowed)"),
		anyField("poll", doc),
		anyField("payload_json", doc),
	}
}

func dMessageShape(name, doc string, extra []Field, rules ...Rule) *Shape {
	return &Shape{Name: name, Doc: doc, Fields: append(dMessageFields(doc), extra...), Prefixes: []string{"files["},
		Rules: append([]Rule{embedTotal, dMessageComponents}, rules...)}
}

var dCreateMessageShape = dMessageShape("create message body", dCreateMessage, []Field{
	{Name: "nonce", Kind: IntOrString, Max: 25, Doc: dCreateMessage + " (nonce: integer or string, max 25 characters)"},
	obj("message_reference", dReferenceShape, dCreateMessage),
	arr("sticker_ids", 0, 3, &Field{Kind: String}, dCreateMessage+" (sticker_ids: up to 3)"),
	boolean("enforce_nonce", dCreateMessage),
}, oneOf(dCreateMessage+" (at least one of content, embeds, sticker_ids, components, files[n] or poll)",
	"content", "embeds", "sticker_ids", "components", "files[0]", "poll"))

var dEditMessageShape = dMessageShape("edit message body", dEditMessage, nil)

var dFollowupShape = dMessageShape("followup message body", dFollowup, []Field{
	str0("username", 80, dFollowup),
	str0("avatar_url", 0, dFollowup),
	str0("thread_name", 100, dFollowup),
	arr("applied_tags", 0, 0, nil, dFollowup),
}, oneOf(dFollowup+" (one of content, embeds, components, files[n] or poll)", "content", "embeds", "components", "files[0]", "poll"))

var dEditFollowupShape = dMessageShape("edit followup body", dEditFollowup, nil)

// Interaction responses: the callback type picks the data.
var dCallback = union("interaction response", "type", dCallbackTypes,
	&Shape{Name: "PONG response", Doc: dResponse, Fields: []Field{dType(dCallbackTypes, 1)}},
	&Shape{Name: "CHANNEL_MESSAGE_WITH_SOURCE response", Doc: dResponse, Fields: []Field{
		dType(dCallbackTypes, 4),
		required(obj("data", dMessageShape("interaction message", dRespMessages, nil), dRespMessages)),
	}},
	&Shape{Name: "DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE response", Doc: dResponse, Fields: []Field{
		dType(dCallbackTypes, 5),
		obj("data", &Shape{Name: "deferred data", Doc: dRespMessages, Fields: []Field{integer("flags", dRespMessages+" (flags: EPHEMERAL)")}}, dRespMessages),
	}},
	&Shape{Name: "DEFERRED_UPDATE_MESSAGE response", Doc: dResponse, Fields: []Field{dType(dCallbackTypes, 6)}},
	&Shape{Name: "UPDATE_MESSAGE response", Doc: dResponse, Fields: []Field{
		dType(dCallbackTypes, 7),
		required(obj("data", dMessageShape("interaction message", dRespMessages, nil), dRespMessages)),
	}},
	&Shape{Name: "MODAL response", Doc: dResponse, Fields: []Field{
		dType(dCallbackTypes, 9),
		required(obj("data", &Shape{Name: "modal", Doc: dRespModal, Fields: []Field{
			customID(dRespModal),
			reqStr("title", 1, 45, dRespModal+" (title: max 45 characters)"),
			required(arr("components", 1, 5, of(dModalChild), dRespModal+" (components: 1–5)")),
		}}, dRespModal)),
	}},
)

var dThreadShape = &Shape{Name: "start thread from message body", Doc: dThread, Fields: []Field{
	reqStr("name", 1, 100, dThread+" (name: 1–100 characters)"),
	intEnum("auto_archive_duration", dThread+" (auto_archive_duration: 60, 1440, 4320, 10080)", "60", "1440", "4320", "10080"),
	{Name: "rate_limit_per_user", Kind: Integer, MinSet: true, Min: 0, Max: 21600, Doc: dThread + " (rate_limit_per_user: 0–21600)"},
}}

func dOptionShape(depth int) *Shape {
	s := &Shape{Name: "command option", Doc: dOption, Fields: []Field{
		required(intEnum("type", dOption+" (type: 1–11)", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")),
		reqStr("name", 1, 32, dOption+" (name: 1–32 characters)"),
		anyField("name_localizations", dOption),
		reqStr("description", 1, 100, dOption+" (description: 1–100 characters)"),
		anyField("description_localizations", dOption),
		boolean("required", dOption),
		arr("choices", 0, 25, nil, dOption+" (choices: max 25)"),
		arr("channel_types", 0, 0, nil, dOption),
		anyField("min_value", dOption),
		anyField("max_value", dOption),
		{Name: "min_length", Kind: Integer, MinSet: true, Min: 0, Max: 6000, Doc: dOption + " (min_length: 0–6000)"},
		{Name: "max_length", Kind: Integer, Min: 1, Max: 6000, Doc: dOption + " (max_length: 1–6000)"},
		boolean("autocomplete", dOption),
	}}
	if depth < 2 {
		s.Fields = append(s.Fields, arr("options", 0, 25, of(dOptionShape(depth+1)), dOption+" (options: max 25; subcommands nest two levels)"))
	}
	return s
}

var dCommandShape = &Shape{Name: "application command", Doc: dCommand, Fields: []Field{
	anyField("id", dCommand),
	intEnum("type", dCommand+" (type: 1 CHAT_INPUT, 2 USER, 3 MESSAGE, 4 PRIMARY_ENTRY_POINT)", "1", "2", "3", "4"),
	reqStr("name", 1, 32, dCommand+" (name: 1–32 characters)"),
	anyField("name_localizations", dCommand),
	str0("description", 100, dCommand+" (description: 1–100 characters for CHAT_INPUT)"),
	anyField("description_localizations", dCommand),
	arr("options", 0, 25, of(dOptionShape(0)), dCommand+" (options: max 25)"),
	{Name: "default_member_permissions", Kind: String, Doc: dCommand + " (default_member_permissions: a bit set as a string)"},
	boolean("dm_permission", dCommand),
	boolean("nsfw", dCommand),
	arr("integration_types", 0, 0, nil, dCommand),
	arr("contexts", 0, 0, nil, dCommand),
	integer("handler", dCommand),
}}

var dCreateDMShape = &Shape{Name: "create DM body", Doc: dCreateDM, Fields: []Field{
	reqStr("recipient_id", 1, 0, dCreateDM+" (recipient_id: required)"),
}}

var discordRoutes = map[string]*Field{
	"POST /channels/{channel}/messages":                   {Kind: Object, Shape: dCreateMessageShape, Doc: dCreateMessage},
	"PATCH /channels/{channel}/messages/{message}":        {Kind: Object, Shape: dEditMessageShape, Doc: dEditMessage},
	"POST /channels/{channel}/messages/{message}/threads": {Kind: Object, Shape: dThreadShape, Doc: dThread},
	"POST /interactions/{id}/{token}/callback":            {Kind: Object, Shape: dCallback, Doc: dResponse},
	"POST /webhooks/{app}/{token}":                        {Kind: Object, Shape: dFollowupShape, Doc: dFollowup},
	"PATCH /webhooks/{app}/{token}/messages/{message}":    {Kind: Object, Shape: dEditFollowupShape, Doc: dEditFollowup},
	"PUT /applications/{app}/commands":                    {Kind: Array, Max: 100, Elem: of(dCommandShape), Doc: dCommands + " (up to 100 commands)"},
	"PUT /applications/{app}/guilds/{guild}/commands":     {Kind: Array, Max: 100, Elem: of(dCommandShape), Doc: dCommands},
	"POST /users/@me/channels":                            {Kind: Object, Shape: dCreateDMShape, Doc: dCreateDM},
}
