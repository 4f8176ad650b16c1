package slackfake

import (
	"slices"
	"sort"
)

// documentedArgs are the arguments each Web API method the fake implements takes, as Slack's
// method reference lists them (required and optional; the token, sent in a header or the body,
// is left out: the fake takes it out of the parameters before anything is recorded). Slack
// ignores an argument a method does not take without a word — unfurl_links sent to chat.update
// changes nothing, and says nothing —, so the fake does not refuse one either: it records it
// (Call.Undocumented), and tests assert that none was sent. Checked against the reference in
// August 2026.
var documentedArgs = map[string][]string{
	// https://docs.slack.dev/reference/methods/auth.test
	"auth.test": {},
	// https://docs.slack.dev/reference/methods/apps.connections.open
	"apps.connections.open": {},
	// https://docs.slack.dev/reference/methods/oauth.v2.access
	"oauth.v2.access": {"client_id", "client_secret", "code", "code_verifier", "grant_type", "redirect_uri", "refresh_token"},
	// https://docs.slack.dev/reference/methods/chat.postMessage
	"chat.postMessage": {"as_user", "attachments", "blocks", "channel", "current_draft_last_updated_ts", "icon_emoji",
		"icon_url", "link_names", "markdown_text", "metadata", "mrkdwn", "parse", "reply_broadcast", "text", "thread_ts",
		"unfurl_links", "unfurl_media", "username"},
	// https://docs.slack.dev/reference/methods/chat.update — no unfurl_links, unfurl_media,
	// thread_ts: a message keeps its unfurls and its thread.
	"chat.update": {"as_user", "attachments", "blocks", "channel", "file_ids", "link_names", "markdown_text", "metadata",
		"parse", "reply_broadcast", "text", "ts", "unfurled_attachments"},
	// https://docs.slack.dev/reference/methods/chat.delete
	"chat.delete": {"as_user", "channel", "ts"},
	// https://docs.slack.dev/reference/methods/chat.postEphemeral — no unfurl_links or
	// unfurl_media: an ephemeral message is never unfurled.
	"chat.postEphemeral": {"as_user", "attachments", "blocks", "channel", "icon_emoji", "icon_url", "link_names",
		"markdown_text", "metadata", "parse", "text", "thread_ts", "user", "username"},
	// https://docs.slack.dev/reference/methods/chat.startStream
	"chat.startStream": {"channel", "chunks", "icon_emoji", "icon_url", "markdown_text", "recipient_team_id",
		"recipient_user_id", "task_display_mode", "thread_ts", "username"},
	// https://docs.slack.dev/reference/methods/chat.appendStream
	"chat.appendStream": {"channel", "chunks", "markdown_text", "ts"},
	// https://docs.slack.dev/reference/methods/chat.stopStream
	"chat.stopStream": {"blocks", "channel", "chunks", "markdown_text", "metadata", "ts"},
	// https://docs.slack.dev/reference/methods/assistant.threads.setStatus
	"assistant.threads.setStatus": {"channel_id", "icon_emoji", "icon_url", "loading_messages", "status", "thread_ts", "username"},
	// https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts — thread_ts
	// only for apps on assistant_view: an agent_view app's call with it silently fails.
	"assistant.threads.setSuggestedPrompts": {"channel_id", "prompts", "thread_ts", "title"},
	// https://docs.slack.dev/reference/methods/assistant.threads.setTitle
	"assistant.threads.setTitle": {"channel_id", "thread_ts", "title"},
	// https://docs.slack.dev/reference/methods/files.getUploadURLExternal
	"files.getUploadURLExternal": {"alt_txt", "filename", "length", "snippet_type"},
	// https://docs.slack.dev/reference/methods/files.completeUploadExternal
	"files.completeUploadExternal": {"blocks", "channel_id", "channels", "files", "icon_emoji", "icon_url",
		"initial_comment", "thread_ts", "username"},
	// https://docs.slack.dev/reference/methods/conversations.history
	"conversations.history": {"channel", "cursor", "include_all_metadata", "inclusive", "latest", "limit", "oldest"},
	// https://docs.slack.dev/reference/methods/conversations.replies
	"conversations.replies": {"channel", "cursor", "include_all_metadata", "inclusive", "latest", "limit", "oldest", "ts"},
	// https://docs.slack.dev/reference/methods/views.open
	"views.open": {"interactivity_pointer", "trigger_id", "view"},
}

// DocumentedArgs returns the arguments Slack's method reference lists for method (the token
// aside), sorted; ok is false for a method the fake does not implement.
func DocumentedArgs(method string) (args []string, ok bool) {
	args, ok = documentedArgs[method]
	return slices.Clone(args), ok
}

// DocumentedMethods returns the Web API methods the fake implements, each with its documented
// arguments (DocumentedArgs), sorted.
func DocumentedMethods() []string {
	out := make([]string, 0, len(documentedArgs))
	for m := range documentedArgs {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// undocumented returns the parameters of a call of method that its reference does not list,
// sorted; none for a method the fake does not implement (it answers unknown_method).
func undocumented(method string, params map[string]string) []string {
	args, ok := documentedArgs[method]
	if !ok {
		return nil
	}
	var out []string
	for p := range params {
		if !slices.Contains(args, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
