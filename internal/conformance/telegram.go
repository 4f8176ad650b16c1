package conformance

import (
	"fmt"
	"regexp"
)

// Telegram's rules: each Bot API method the adapter calls, with the parameters its reference
// lists (https://core.telegram.org/bots/api#available-methods), and the objects it sends
// (InlineKeyboardMarkup, ReplyParameters, LinkPreviewOptions, BotCommand). Texts count UTF-16
// code units after entities parsing, callback_data bytes. Form bodies carry JSON-serialized
// objects. Checked against Bot API 9.x in December 2026.

const (
	tgDocs           = "https://core.telegram.org/bots/api#"
	tgSendMessage    = tgDocs + "sendmessage"
	tgEditText       = tgDocs + "editmessagetext"
	tgDraft          = tgDocs + "sendmessagedraft"
	tgFormatting     = tgDocs + "formatting-options"
	tgButton         = tgDocs + "inlinekeyboardbutton"
	tgKeyboard       = tgDocs + "inlinekeyboardmarkup"
	tgReplyParams    = tgDocs + "replyparameters"
	tgLinkPreview    = tgDocs + "linkpreviewoptions"
	tgChatAction     = tgDocs + "sendchataction"
	tgAnswerCallback = tgDocs + "answercallbackquery"
	tgSetCommands    = tgDocs + "setmycommands"
	tgBotCommand     = tgDocs + "botcommand"
	tgSendDocument   = tgDocs + "senddocument"
	tgGetUpdates     = tgDocs + "getupdates"
	tgSetWebhook     = tgDocs + "setwebhook"
)

func parseMode(doc string) Field {
	return enum("parse_mode", tgFormatting+" (parse_mode: MarkdownV2, HTML or Markdown)", "MarkdownV2", "HTML", "Markdown")
}

var tgChatID = Field{Name: "chat_id", Kind: IntOrString, Required: true, Doc: tgSendMessage + " (chat_id: Integer or String, required)"}

var tgButtonShape = &Shape{Name: "InlineKeyboardButton", Doc: tgButton, Fields: []Field{
	// The Bot API documents no maximum for a button's text; an empty one is refused.
	reqStr("text", 1, 0, tgButton+" (text: label text on the button)"),
	str0("url", 0, tgButton),
	{Name: "callback_data", Kind: String, Min: 1, Max: 64, Unit: Bytes, Doc: tgButton + " (callback_data: 1-64 bytes)"},
	anyField("web_app", tgButton),
	anyField("login_url", tgButton),
	str0("switch_inline_query", 0, tgButton),
	str0("switch_inline_query_current_chat", 0, tgButton),
	anyField("switch_inline_query_chosen_chat", tgButton),
	anyField("copy_text", tgButton),
	anyField("callback_game", tgButton),
	boolean("pay", tgButton),
}, Rules: []Rule{{Kind: RuleStructure, Doc: tgButton + " (exactly one of the optional fields must be used)",
	Check: func(o map[string]any, report func(string, string)) {
		n := 0
		for k, v := range o {
			if k != "text" && v != nil {
				n++
			}
		}
		if n != 1 {
			report("", fmt.Sprintf("uses %d of the optional fields, want exactly one", n))
		}
	}}}}

var tgInlineKeyboard = &Shape{Name: "InlineKeyboardMarkup", Doc: tgKeyboard, Fields: []Field{
	required(arr("inline_keyboard", 0, 0, &Field{Kind: Array, Elem: of(tgButtonShape), Doc: tgKeyboard},
		tgKeyboard+" (inline_keyboard: Array of Array of InlineKeyboardButton)")),
}}

var tgReplyParamsShape = &Shape{Name: "ReplyParameters", Doc: tgReplyParams, Fields: []Field{
	required(integer("message_id", tgReplyParams+" (message_id: required)")),
	{Name: "chat_id", Kind: IntOrString, Doc: tgReplyParams},
	boolean("allow_sending_without_reply", tgReplyParams),
	{Name: "quote", Kind: String, Max: 1024, Unit: UTF16, Doc: tgReplyParams + " (quote: 0-1024 characters after entities parsing)"},
	parseMode(tgReplyParams),
	arr("quote_entities", 0, 0, nil, tgReplyParams),
	integer("quote_position", tgReplyParams),
	integer("checklist_task_id", tgReplyParams),
}}

var tgLinkPreviewShape = &Shape{Name: "LinkPreviewOptions", Doc: tgLinkPreview, Fields: []Field{
	boolean("is_disabled", tgLinkPreview),
	str0("url", 0, tgLinkPreview),
	boolean("prefer_small_media", tgLinkPreview),
	boolean("prefer_large_media", tgLinkPreview),
	boolean("show_above_text", tgLinkPreview),
}}

// tgReplyMarkup takes an InlineKeyboardMarkup; the reply keyboards the adapter never sends are
// let through by their own fields, unchecked.
var tgReplyMarkup = &Shape{Name: "reply markup", Doc: tgSendMessage + " (reply_markup)", Fields: append(
	[]Field{arr("inline_keyboard", 0, 0, &Field{Kind: Array, Elem: of(tgButtonShape), Doc: tgKeyboard},
		tgKeyboard+" (inline_keyboard: Array of Array of InlineKeyboardButton)")},
	anyField("keyboard", tgDocs+"replykeyboardmarkup"), anyField("is_persistent", tgDocs+"replykeyboardmarkup"),
	anyField("resize_keyboard", tgDocs+"replykeyboardmarkup"), anyField("one_time_keyboard", tgDocs+"replykeyboardmarkup"),
	anyField("input_field_placeholder", tgDocs+"replykeyboardmarkup"), anyField("selective", tgDocs+"replykeyboardmarkup"),
	anyField("remove_keyboard", tgDocs+"replykeyboardremove"), anyField("force_reply", tgDocs+"forcereply"),
)}

// tgText is a message text: 1–4096 characters after entities parsing.
func tgText(doc string, minLen int) Field {
	return Field{Name: "text", Kind: String, Required: true, Min: minLen, Max: 4096, Unit: Visible,
		Doc: doc + fmt.Sprintf(" (text: %d-4096 characters after entities parsing)", minLen)}
}

func tgMethod(name, doc string, fields []Field, rules ...Rule) *Field {
	return &Field{Kind: Object, Doc: doc, Shape: &Shape{Name: name + " parameters", Doc: doc, Fields: fields, Rules: rules}}
}

// botCommandName: "1-32 characters. Can contain only lowercase English letters, digits and
// underscores."
var botCommandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

var tgBotCommandShape = &Shape{Name: "BotCommand", Doc: tgBotCommand, Fields: []Field{
	reqStr("command", 1, 32, tgBotCommand+" (command: 1-32 characters)"),
	reqStr("description", 1, 256, tgBotCommand+" (description: 1-256 characters)"),
}, Rules: []Rule{{Kind: RuleEnum, Doc: tgBotCommand + " (command: only lowercase English letters, digits and underscores)",
	Check: func(o map[string]any, report func(string, string)) {
		if c, ok := o["command"].(string); ok && c != "" && !botCommandName.MatchString(c) {
			report("command", fmt.Sprintf("%q has characters other than lowercase English letters, digits and underscores", c))
		}
	}}}}

// secretToken: "1-256 characters. Only characters A-Z, a-z, 0-9, _ and - are allowed."
var secretToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

var tgAllowedUpdates = arr("allowed_updates", 0, 0, &Field{Kind: String}, tgGetUpdates+" (allowed_updates: JSON-serialized list of update types)")

var telegramMethods = map[string]*Field{
	"getMe":          tgMethod("getMe", tgDocs+"getme", nil),
	"getMyCommands":  tgMethod("getMyCommands", tgDocs+"getmycommands", []Field{anyField("scope", tgDocs+"getmycommands"), str0("language_code", 0, tgDocs+"getmycommands")}),
	"getWebhookInfo": tgMethod("getWebhookInfo", tgDocs+"getwebhookinfo", nil),
	"deleteWebhook":  tgMethod("deleteWebhook", tgDocs+"deletewebhook", []Field{boolean("drop_pending_updates", tgDocs+"deletewebhook")}),
	"getFile":        tgMethod("getFile", tgDocs+"getfile", []Field{reqStr("file_id", 1, 0, tgDocs+"getfile (file_id: required)")}),
	"getUpdates": tgMethod("getUpdates", tgGetUpdates, []Field{
		integer("offset", tgGetUpdates),
		{Name: "limit", Kind: Integer, Min: 1, Max: 100, Doc: tgGetUpdates + " (limit: 1-100)"},
		{Name: "timeout", Kind: Integer, MinSet: true, Min: 0, Doc: tgGetUpdates + " (timeout: in seconds, 0 short polling)"},
		tgAllowedUpdates,
	}),
	"setWebhook": tgMethod("setWebhook", tgSetWebhook, []Field{
		reqStr("url", 0, 0, tgSetWebhook+" (url: required; empty removes the webhook)"),
		Field{Name: "certificate", Kind: File, Doc: tgSetWebhook},
		str0("ip_address", 0, tgSetWebhook),
		{Name: "max_connections", Kind: Integer, Min: 1, Max: 100, Doc: tgSetWebhook + " (max_connections: 1-100)"},
		tgAllowedUpdates,
		boolean("drop_pending_updates", tgSetWebhook),
		str0("secret_token", 256, tgSetWebhook+" (secret_token: 1-256 characters A-Z, a-z, 0-9, _ and -)"),
	}, Rule{Kind: RuleEnum, Doc: tgSetWebhook + " (secret_token: only A-Z, a-z, 0-9, _ and - are allowed)",
		Check: func(o map[string]any, report func(string, string)) {
			if s, ok := o["secret_token"].(string); ok && !secretToken.MatchString(s) {
				report("secret_token", "has characters other than A-Z, a-z, 0-9, _ and -, or is empty")
			}
		}}),
	"sendMessage": tgMethod("sendMessage", tgSendMessage, []Field{
		str0("business_connection_id", 0, tgSendMessage),
		tgChatID,
		integer("message_thread_id", tgSendMessage),
		integer("direct_messages_topic_id", tgSendMessage),
		tgText(tgSendMessage, 1),
		parseMode(tgSendMessage),
		arr("entities", 0, 0, nil, tgSendMessage),
		obj("link_preview_options", tgLinkPreviewShape, tgSendMessage),
		boolean("disable_notification", tgSendMessage),
		boolean("protect_content", tgSendMessage),
		boolean("allow_paid_broadcast", tgSendMessage),
		str0("message_effect_id", 0, tgSendMessage),
		anyField("suggested_post_parameters", tgSendMessage),
		obj("reply_parameters", tgReplyParamsShape, tgSendMessage),
		obj("reply_markup", tgReplyMarkup, tgSendMessage),
	}, exclusive(tgSendMessage+" (entities can be specified instead of parse_mode)", "parse_mode", "entities")),
	"editMessageText": tgMethod("editMessageText", tgEditText, []Field{
		str0("business_connection_id", 0, tgEditText),
		{Name: "chat_id", Kind: IntOrString, Doc: tgEditText + " (chat_id: required if inline_message_id is not specified)"},
		integer("message_id", tgEditText+" (message_id: required if inline_message_id is not specified)"),
		str0("inline_message_id", 0, tgEditText),
		tgText(tgEditText, 1),
		parseMode(tgEditText),
		arr("entities", 0, 0, nil, tgEditText),
		obj("link_preview_options", tgLinkPreviewShape, tgEditText),
		obj("reply_markup", tgInlineKeyboard, tgEditText+" (reply_markup: an inline keyboard)"),
	}, Rule{Kind: RuleRequired, Doc: tgEditText + " (chat_id and message_id, or inline_message_id)",
		Check: func(o map[string]any, report func(string, string)) {
			if present(o, "inline_message_id") {
				return
			}
			for _, f := range []string{"chat_id", "message_id"} {
				if !present(o, f) {
					report(f, "missing: required if inline_message_id is not specified")
				}
			}
		}}, exclusive(tgEditText+" (entities can be specified instead of parse_mode)", "parse_mode", "entities")),
	"sendMessageDraft": tgMethod("sendMessageDraft", tgDraft, []Field{
		{Name: "chat_id", Kind: Integer, Required: true, Doc: tgDraft + " (chat_id: Integer, the target private chat)"},
		integer("message_thread_id", tgDraft),
		{Name: "draft_id", Kind: Integer, Required: true, Doc: tgDraft + " (draft_id: required, non-zero)"},
		{Name: "text", Kind: String, Max: 4096, Unit: Visible, Doc: tgDraft + " (text: 0-4096 characters after entities parsing; an empty draft shows as Thinking…)"},
		parseMode(tgDraft),
		arr("entities", 0, 0, nil, tgDraft),
	}, Rule{Kind: RuleRequired, Doc: tgDraft + " (draft_id: unique identifier of the draft; must be non-zero)",
		Check: func(o map[string]any, report func(string, string)) {
			if n, ok := asInt(o["draft_id"]); ok && n == 0 {
				report("draft_id", "is 0; must be non-zero")
			}
		}}),
	"deleteMessage": tgMethod("deleteMessage", tgDocs+"deletemessage", []Field{
		tgChatID, required(integer("message_id", tgDocs+"deletemessage (message_id: required)")),
	}),
	"sendChatAction": tgMethod("sendChatAction", tgChatAction, []Field{
		str0("business_connection_id", 0, tgChatAction),
		tgChatID,
		integer("message_thread_id", tgChatAction),
		required(enum("action", tgChatAction+" (action: typing, upload_photo, record_video, upload_video, record_voice, upload_voice, upload_document, choose_sticker, find_location, record_video_note, upload_video_note)",
			"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice", "upload_document",
			"choose_sticker", "find_location", "record_video_note", "upload_video_note")),
	}),
	"answerCallbackQuery": tgMethod("answerCallbackQuery", tgAnswerCallback, []Field{
		reqStr("callback_query_id", 1, 0, tgAnswerCallback+" (callback_query_id: required)"),
		{Name: "text", Kind: String, Max: 200, Unit: UTF16, Doc: tgAnswerCallback + " (text: 0-200 characters)"},
		boolean("show_alert", tgAnswerCallback),
		str0("url", 0, tgAnswerCallback),
		integer("cache_time", tgAnswerCallback),
	}),
	"setMyCommands": tgMethod("setMyCommands", tgSetCommands, []Field{
		required(arr("commands", 0, 100, of(tgBotCommandShape), tgSetCommands+" (commands: at most 100)")),
		anyField("scope", tgSetCommands),
		str0("language_code", 0, tgSetCommands),
	}),
	"sendDocument": tgMethod("sendDocument", tgSendDocument, []Field{
		str0("business_connection_id", 0, tgSendDocument),
		tgChatID,
		integer("message_thread_id", tgSendDocument),
		integer("direct_messages_topic_id", tgSendDocument),
		required(Field{Name: "document", Kind: File, Doc: tgSendDocument + " (document: InputFile or String, required)"}),
		{Name: "thumbnail", Kind: File, Doc: tgSendDocument},
		{Name: "caption", Kind: String, Max: 1024, Unit: Visible, Doc: tgSendDocument + " (caption: 0-1024 characters after entities parsing)"},
		parseMode(tgSendDocument),
		arr("caption_entities", 0, 0, nil, tgSendDocument),
		boolean("disable_content_type_detection", tgSendDocument),
		boolean("disable_notification", tgSendDocument),
		boolean("protect_content", tgSendDocument),
		boolean("allow_paid_broadcast", tgSendDocument),
		str0("message_effect_id", 0, tgSendDocument),
		anyField("suggested_post_parameters", tgSendDocument),
		obj("reply_parameters", tgReplyParamsShape, tgSendDocument),
		obj("reply_markup", tgReplyMarkup, tgSendDocument),
	}),
}
