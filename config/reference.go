package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Section is one top-level section of the configuration as Reference describes it.
type Section struct {
	// Name is the section's key, like "telegram".
	Name string
	// Description says what the section configures (Markdown, one paragraph).
	Description string
	// Keys are the section's keys in struct order.
	Keys []KeyInfo
}

// KeyInfo describes one configuration key for an operator.
type KeyInfo struct {
	// Key is the key path, like "telegram.api_url".
	Key string
	// Env is the environment variable that sets it, like "BOT_TELEGRAM__API_URL"; empty for a
	// Structured key.
	Env string
	// Type names the value's type: string, boolean, integer, duration or list.
	Type string
	// Default is the built-in default as a config file would spell it ("30s", "sb:", "true");
	// empty for an empty string or list.
	Default string
	// Secret says the value is a secret: never printed, and it may be given as FileKey instead.
	Secret bool
	// FileKey and FileEnv are the "<key>_file" form of a secret and its variable; empty for a
	// key that is not a secret.
	FileKey, FileEnv string
	// Structured says the key holds mappings (or a list of them), like profiles: it is set in
	// the YAML file only, and no environment variable sets it.
	Structured bool
	// Description says what the key means (Markdown, one paragraph).
	Description string
}

// Reference describes every configuration key, by section, in struct order; a top-level key
// that is not a section (profiles, routes) is a section of its own, holding that one key. It is
// the source of docs/configuration.md; a key without a description has an empty Description (a
// test in this package refuses that).
func Reference() []Section {
	def := reflect.ValueOf(Default()).Elem()
	var out []Section
	for _, l := range schema.ordered {
		name, _, _ := strings.Cut(l.key, ".")
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, Section{Name: name, Description: sectionDescriptions[name]})
		}
		k := KeyInfo{
			Key:         l.key,
			Env:         envName(l.key),
			Type:        typeName(l.typ),
			Default:     defaultText(l, def.FieldByIndex(l.index)),
			Secret:      l.secret != notSecret,
			Description: describeKey(l.key),
		}
		if k.Secret {
			k.FileKey = l.key + fileSuffix
			k.FileEnv = envName(k.FileKey)
		}
		if structuredKeys[l.key] != nil {
			k.Structured, k.Env = true, ""
		}
		out[len(out)-1].Keys = append(out[len(out)-1].Keys, k)
	}
	return out
}

// describeKey looks a key up in keyDescriptions: itself, or, for access.<platform>.* and
// admins.<platform>, its per-platform form.
func describeKey(key string) string {
	if d, ok := keyDescriptions[key]; ok {
		return d
	}
	return keyDescriptions[platformPattern(key)]
}

// platformPattern replaces the platform segment of access.<platform>.* and admins.<platform>
// with "<platform>"; other keys are returned unchanged.
func platformPattern(key string) string {
	parts := strings.Split(key, ".")
	if len(parts) >= 2 && (parts[0] == "access" || parts[0] == "admins") {
		for _, p := range Platforms() {
			if parts[1] == p {
				parts[1] = "<platform>"
				return strings.Join(parts, ".")
			}
		}
	}
	return key
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() == reflect.Int:
		return "integer"
	case t.Kind() == reflect.Slice:
		return "list"
	case t.Kind() == reflect.Map:
		return "mapping"
	}
	return t.String()
}

// defaultText spells a default as a config file would: durations without zero units ("2m", not
// "2m0s"), lists comma-separated.
func defaultText(l *leaf, v reflect.Value) string {
	switch {
	case l.typ == durationType:
		return shortDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.Map && v.Len() == 0:
		return ""
	case v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v.Interface())
}

func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sectionDescriptions and keyDescriptions are what docs/configuration.md says of each section
// and key. access.<platform>.* and admins.<platform> are described once for every platform.
var sectionDescriptions = map[string]string{
	"redis": "The store of the run queue and the thread state. Without `redis.url` and `redis.addrs` it is " +
		"embedded in the process (fine for one process, lost on restart); several processes share one Redis, " +
		"Sentinel or Cluster: Redis 7.0 or later (or a compatible server such as Valkey); the bot refuses an older one at start.",
	"llm":  "The model provider: the top-level endpoint and model (the default profile's), named endpoints for profiles, voice transcription.",
	"auth": "The keys that sign run envelopes (and, derived from the newest, the ids of buttons and menus).",
	"telegram": "The Telegram adapter, enabled when `telegram.token` is set; step by step in " +
		"[telegram.md](telegram.md).",
	"slack":   "The Slack adapter, enabled when `slack.bot_token` is set.",
	"discord": "The Discord adapter, enabled when `discord.token` is set.",
	"access": "Who may talk to the bot, per platform (`telegram`, `slack`, `discord`, `console`). Users are " +
		"named by `channel_user_id`: the platform's user id (numeric on Telegram and Discord, `U…` on Slack).",
	"admins": "Who may use the admin commands (`/stats`, `/pause`, `/resume`, `/allow`, `/deny`, `/deadletters`, " +
		"`/model`, …), per platform, by `channel_user_id`. Admin rights are checked on the identity the platform " +
		"reported, never on what a message says.",
	"http": "The one HTTP listener of the process.",
	"runs": "The run queue and the workers that execute runs.",
	"attachments": "The files users send with a message: whether they are downloaded, and how much of them is " +
		"read — the text of text files, images for a model that sees (`llm.vision`, a profile's `vision`), voice " +
		"notes as transcripts (`llm.transcription`). What becomes of each kind of file: " +
		"[profiles.md](profiles.md#files-users-send).",
	"subagents": "Limits on the subagents a lead agent may start.",
	"tools": "Tools the agents use from MCP servers, called as the verified user who asked, with a policy of who " +
		"may use what and which calls wait for approval in the chat ([tools.md](tools.md)). `servers` and `policy` " +
		"are structured and set in the YAML file.",
	"log": "The process log, written to standard error.",

	"profiles": "Agent profiles: a system prompt, model, endpoint, tools and limits of their own, for the " +
		"conversations `routes` send them. Set in the YAML file; a guide with an example for each platform: " +
		"[profiles.md](profiles.md).",
	"routes": "Which conversations get which profile, by platform, workspace, chat, DM and sender. Set in the YAML " +
		"file; how each selector matches: [profiles.md](profiles.md#routes).",
}

var keyDescriptions = map[string]string{
	"redis.url": "Where Redis is: `redis://[user:password@]host:port/db`, `rediss://…` (TLS) or `unix:///path`. " +
		"Empty: the embedded store (in `single` mode with no `redis.addrs`). A password in it is masked when " +
		"printed.",
	"redis.mode": "`single`, `sentinel` or `cluster`.",
	"redis.addrs": "`host:port` pairs: the server in `single` mode (at most one, instead of `redis.url`), the " +
		"sentinels in `sentinel` mode, the seed nodes in `cluster` mode (or `redis.url`).",
	"redis.prefix":      "Starts every key Switchboard writes, so that tenants and tests sharing one Redis never collide.",
	"redis.master_name": "The Sentinel master's name; required in `sentinel` mode.",
	"redis.password":    "Authenticates to Redis (the master in `sentinel` mode, every node in `cluster` mode); overrides a password in `redis.url`.",
	"redis.connect_timeout": "How long startup keeps trying a Redis that does not answer (with backoff, one log line per " +
		"attempt) before `bot run` gives up with exit status 1; a Redis that starts a little after the bot is fine.",

	"llm.provider": "`openai` (any OpenAI-compatible server) or `demo` (the offline demo model, which is not an " +
		"AI). Unset: `openai` when an API key or a `llm.base_url` other than DeepSeek's is configured, `demo` " +
		"otherwise.",
	"llm.base_url": "The OpenAI-compatible endpoint (DeepSeek's by default; a local server works too).",
	"llm.api_key": "The bearer key sent to `llm.base_url`. Unset while `llm.base_url` is DeepSeek's: taken from " +
		"`DEEPSEEK_API_KEY` (a DeepSeek key is never sent elsewhere). Required for DeepSeek.",
	"llm.model":         "The model name sent with every request; required with `openai`.",
	"llm.timeout":       "Bounds one model call, streaming included.",
	"llm.max_retries":   "How often a model call answered 429 or 5xx is retried; 0 disables retries.",
	"llm.system_prompt": "Replaces the lead agent's built-in system prompt when set.",
	"llm.vision":        "Whether `llm.model` takes images: `true` sends the pictures of a message to the model with its text.",
	"llm.providers": "Named OpenAI-compatible endpoints besides the top-level one, for `profiles` and " +
		"`llm.transcription` to name (letters, digits, `-`): `base_url` (required), `api_key` (a secret, never " +
		"printed; or `api_key_file`, a path relative to the config file's folder; none for a local server), " +
		"`model` (what a profile naming the provider but no model uses), `timeout` and `max_retries` (default: " +
		"`llm.timeout`, `llm.max_retries`). Set in the YAML file, e.g. " +
		"`{local: {base_url: \"http://localhost:11434/v1\", model: llama3.1}}`.",
	"llm.transcription.provider": "The endpoint that transcribes voice notes (`POST <base_url>/audio/transcriptions`): " +
		"empty for the top-level one, else a name in `llm.providers`.",
	"llm.transcription.model": "The transcription model, e.g. `whisper-1`; empty turns transcription off.",

	"profiles": "Agent profiles by name (1–64 letters, digits, `_`, `-`; `default` is the top-level settings): " +
		"`system_prompt`, `model`, `provider` (a name in `llm.providers`), `models` (what `/model` may choose; " +
		"unset: any), `tools` (globs over offered names like `tickets__*`, as `tools.policy`'s; unset: every tool " +
		"the policy allows; `[]`: none), `vision`, `history_turns`, `subagents: {max_depth, max_concurrent}`. " +
		"What a profile leaves unset is the top-level setting (`llm.*`, `runs.history_turns`, `subagents.*`); " +
		"a profile naming a provider but no model takes the provider's.",
	"routes": "Which profile a conversation gets, first match wins; none matching: `default`. Each route is " +
		"`{match: {…}, profile: <name>}`; every selector set must hold, an empty `match` matches everything: " +
		"`platform` (`telegram`, `slack`, `discord`, `console`), `team` and `enterprise` (Slack ids; slack " +
		"only), `guild` (a Discord guild id, quoted; discord only), `channel` (the chat's id), `dm` (`true`: " +
		"private chats with the bot; `false`: the others), `user` (the sender's `channel_user_id`). " +
		"`bot check-config --route \"slack:T0123:C0456: dm user=U1\"` says which profile a conversation gets and why.",

	"auth.signing_keys": "HMAC keys that sign run envelopes, newest first: the first signs, all verify (rotate " +
		"by putting a new key in front, drop the old one later). Each at least 16 bytes, e.g. " +
		"`openssl rand -hex 32`; every process sharing a Redis needs the same list. Required with a shared " +
		"Redis; empty with the embedded store, a key is generated per process. Comma-separated in the " +
		"environment, one per line in a `_file`.",

	"telegram.token":   "The bot's token from BotFather (`123456:ABC…`); setting it enables Telegram.",
	"telegram.api_url": "The Bot API server; override for a local Bot API server or tests.",
	"telegram.mode": "`polling` (getUpdates; only one process may poll one bot) or `webhook` (Telegram posts " +
		"updates to `telegram.webhook_url`; any number of processes behind a load balancer).",
	"telegram.webhook_url": "The public HTTPS URL Telegram posts updates to (ports 443, 80, 88 or 8443); its path is " +
		"served on `http.addr`. Required in `webhook` mode.",
	"telegram.webhook_secret": "Telegram's `secret_token`, required on every webhook delivery: 1–256 characters of " +
		"`A-Z a-z 0-9 _ -`. Required in `webhook` mode.",
	"telegram.pacing": "Keeps sends within Telegram's rate limits, per chat and overall; `false` for a local Bot " +
		"API server and load tests.",
	"telegram.drafts": "In private chats, streams the answer as it is written as a native draft " +
		"(`sendMessageDraft`, Bot API 9.3) and ends it with one message — no placeholder, no edits; groups keep " +
		"the placeholder and its edits. A server or chat that refuses drafts gets the placeholder instead.",

	"slack.bot_token":         "The bot token (`xoxb-…`); setting it enables Slack.",
	"slack.app_token":         "The app-level token (`xapp-…`) that opens Socket Mode connections; required in `socket` mode.",
	"slack.client_id":         "The app's OAuth client id; with `slack.client_secret` and `slack.redirect_url` the app installs in many workspaces, each one's bot token kept encrypted in Redis.",
	"slack.client_secret":     "The app's OAuth client secret.",
	"slack.redirect_url":      "The public URL Slack sends installers back to: `slack.oauth_path` behind your HTTPS proxy.",
	"slack.install_path":      "Where the install link (\"Add to Slack\") is served on `http.addr`.",
	"slack.oauth_path":        "Where Slack's OAuth redirect is served on `http.addr`.",
	"slack.signing_secret":    "Verifies the requests Slack sends in `http` mode; required there.",
	"slack.api_url":           "The Web API base URL; override for tests.",
	"slack.mode":              "`socket` (Socket Mode, no public URL) or `http` (Slack posts events to `http.addr`).",
	"slack.connections":       "Socket Mode connections the app holds, 1–10, over all the processes sharing the Redis (each takes its share of the slots); Slack spreads events over them and duplicates are dropped.",
	"slack.thread_replies":    "`all`: messages in a thread the bot is part of need no mention; `mention`: only mentions are read.",
	"slack.reply_in_thread":   "Answer a top-level channel mention in a thread rooted at it (DMs stay flat).",
	"slack.command":           "The slash command declared in the app's manifest; its first word is a bot command (`/bot help`).",
	"slack.assistant_status":  "Show \"is thinking…\" under the thread (`assistant.threads.setStatus`) while a run works.",
	"slack.streaming":         "Stream answers in threads (assistant threads, mention threads) as they are written, with Slack's native streaming (`chat.startStream` / `appendStream` / `stopStream`) and each delegated subagent as a task of the message's plan. Where Slack refuses streaming, answers are posted and edited; `false` always posts and edits.",
	"slack.ready_window":      "How recently every Socket Mode connection must have read something (an envelope, a hello, Slack's pings) for `/readyz` to count Slack as ready.",
	"slack.pacing":            "Space `chat.postMessage` per channel to Slack's pace (about one a second after a short burst), and every other Web API call to its workspace's budget of the method's rate-limit tier, instead of meeting Slack's 429s.",
	"slack.suggested_prompts": "Prompts offered when a user opens the app's agent chat (or an assistant thread, on `assistant_view`); the first four are used; empty offers none.",
	"slack.agent_view":        "The app uses Slack's agent view (`features.agent_view`, as `bot slack-manifest` prints): a top-level message in the agent chat is answered in a thread rooted at it, titled from the message. `false` for apps still on `assistant_view`.",
	"slack.events_path":       "Where `http` mode serves the Events API request URL on `http.addr`.",
	"slack.interactions_path": "Where `http` mode serves the interactivity request URL on `http.addr`.",
	"slack.commands_path":     "Where `http` mode serves the slash command request URL on `http.addr`.",

	"discord.token":          "The bot token; setting it enables Discord.",
	"discord.api_url":        "Scheme and host of Discord's REST API and gateway discovery; override for tests.",
	"discord.application_id": "The application's numeric id (a snowflake).",
	"discord.public_key":     "The application's Ed25519 public key, 64 hex digits, which verifies HTTP interactions; not a secret.",
	"discord.reply_in_thread": "Answer a mention in a channel in a new thread started from that message, so the thread is " +
		"the conversation; `false` answers in the channel, as a reply.",
	"discord.thread_replies": "Which messages of a thread the bot answers in reach it: `all` (no mention needed) or " +
		"`mention`.",
	"discord.message_content": "Ask for the privileged message content intent (turn on Message Content Intent " +
		"in the Developer Portal); `false` runs on mentions and DMs only, whose text Discord always sends, and needs " +
		"`discord.thread_replies: mention`.",
	"discord.pacing": "Keep REST requests within Discord's global limit (50 a second per bot, split among the " +
		"processes sharing its shards; interaction callbacks excepted) before Discord refuses any; `false` for a " +
		"local fake and load tests.",
	"discord.dev_guild": "Register the slash commands in this guild only (they appear at once) instead of globally; " +
		"for development.",
	"discord.shard_id": "This process's shard, from 0, when `discord.shard_count` splits the bot's guilds over " +
		"processes; a second process with the same shard stands by and takes it over when the first stops or dies.",
	"discord.shard_count": "How many shards split the bot's guilds, one per process; 0 or 1 is unsharded.",
	"discord.auto_shard": "Run the shards Discord recommends (GET /gateway/bot), instead of `discord.shard_id` and " +
		"`discord.shard_count`: the processes sharing the Redis split them evenly and take a dead one's over.",
	"discord.admin_permission": "Also give admin rights to a server member holding this Discord permission " +
		"(`MANAGE_GUILD`, `ADMINISTRATOR`, `MANAGE_CHANNELS`…), for slash commands and clicks, where Discord reports " +
		"the member's permissions; empty: `admins.discord` only.",

	"access.<platform>.policy": "`open` (anyone) or `allowlist` (only the users in `allow`, and the platform's " +
		"admins).",
	"access.<platform>.allow": "The `channel_user_id`s admitted under `allowlist`; comma-separated in the environment.",
	"access.<platform>.dm":    "Whether direct messages are answered at all.",
	"admins.<platform>":       "The `channel_user_id`s allowed to use admin commands; comma-separated in the environment.",

	"http.addr": "`host:port` of the listener for `/healthz`, `/readyz` (Redis answers and every channel is " +
		"receiving), `/metrics` (Prometheus) and platform webhooks; `:8080` listens on every interface. " +
		"`bot healthcheck` asks its `/healthz`.",

	"runs.workers": "How many conversations this process works on at once. A worker is a goroutine that mostly waits " +
		"on the model (seconds per answer), so the default is a few hundred: a handful of slow chats must not hold up " +
		"every other chat. `runs.max_pending` bounds the queue behind them.",
	"runs.followup": "What a message does to a conversation that already has a run in flight: `queue` (it waits " +
		"its turn) or `interrupt` (the run is cancelled and the new message starts anew).",
	"runs.max_attempts": "How many times a run is tried before it is dead-lettered (admins can list and replay " +
		"dead letters). With the default outage waits, five tries ride out about three and a half minutes of model outage, " +
		"or of the platform refusing the answer. A run's records (what it sent, how it ended) are kept a day, or an hour " +
		"a try when more than 24 are allowed, so that every try of it finds them.",
	"runs.outage_retry_base": "The first wait before a run that failed on a model outage (HTTP 5xx or 429, a timeout, " +
		"a refused connection, an answer cut mid-stream), or whose answer the platform refused, is tried again; later waits are 4×, 12× and 24× it, then " +
		"doubling (5 s, 20 s, 1 min, 2 min, … by default), up to `runs.max_attempts` tries. The user is told once that " +
		"the answer will follow.",
	"runs.lease": "How long a worker owns a run without renewing its lease. Workers renew every third of it, and " +
		"the runs of a process that died (even `kill -9`) are taken over by another process about one lease after " +
		"its last renewal, so it is roughly the longest a chat waits after a crash; shorter costs more renewals.",
	"runs.max_per_conversation": "The most runs queued behind one conversation; a message beyond it is refused with a \"busy, try again\" reply.",
	"runs.max_pending":          "The most runs pending in the whole queue; a message beyond it is refused with a \"busy, try again\" reply.",
	"runs.history_turns":        "How many past turns of a thread are sent to the model.",
	"runs.clarification_ttl":    "How long a question the bot asked waits for its answer.",
	"runs.max_message_chars":    "The longest message accepted, in characters; a longer one gets a polite refusal.",
	"runs.placeholder_after": "How long a run may take before a \"working\" placeholder is posted (a run answered " +
		"sooner shows one message); 0 posts it at once. The typing signal goes out at receipt either way.",

	"runs.max_answer_messages": "How many chat messages one answer may take. The rest of a longer answer is sent as a " +
		"Markdown file (`answer.md`): a Telegram document, a Slack file upload, a Discord attachment — and as more " +
		"messages when the file is refused. A Slack message holds far more than the others (50 sections of 3,000 " +
		"characters), so there a file starts only past about 140,000 characters a message.",

	"attachments.download": "`true`: the files of a message are downloaded from the platform, with its own " +
		"authentication, and read; `false`: each file is named to the model (with its size, where the platform " +
		"states it) and never downloaded.",
	"attachments.max_bytes": "The largest file downloaded, in bytes, from 1 to 104857600 (100 MiB): a larger one " +
		"is not read, and the answer starts with a line saying so. Telegram lets a bot download files of up to " +
		"20 MB only, whatever this says.",
	"attachments.max_text_chars": "How many characters of one text file, or of one voice note's transcript, the " +
		"model reads, from 1 to 1000000; the rest is cut, and the model is told so. What is read stays in the " +
		"thread's history, so it is sent again with every later message (up to `runs.history_turns`).",
	"attachments.max_files": "How many files of one message are read, from 1 to 100; the others are named to the " +
		"model, and the user is told they were not read.",

	"subagents.max_depth":      "How deep subagents may nest; 0 disables subagents.",
	"subagents.max_concurrent": "The most subagents running at once under one lead agent.",
	"subagents.structured_nudge_retries": "How often a subagent that must return a structured result is " +
		"reminded to, before the run gives up on it.",

	"tools.servers": "MCP servers by name (letters, digits, `-`); each server's tools are offered as " +
		"`<name>__<tool>`. A stdio server: `command` (the program and its arguments), `env` (its whole " +
		"environment: nothing of the bot's leaks to it; `PATH` is a fixed system path unless set), `env_file` " +
		"(variables whose values are read from files), `dir`. A streamable-HTTP server: `url`, `headers`, " +
		"`headers_file` (headers whose values are read from files, e.g. `{Authorization: /run/secrets/auth}`). " +
		"Both: `include` and `exclude` globs over the server's own tool names, `call_timeout`. Env and header " +
		"values are never printed; files are read at every (re)connect.",
	"tools.policy": "Rules, first match wins: `tools` (globs over offered names), `allow` (`everyone`, `admins`, " +
		"or channel_user_ids, optionally `<platform>:<id>`), `approval` (`never`, `always`: the requester " +
		"decides, `admin`: an admin decides). A tool no rule names is open to everyone without approval; a " +
		"tool a caller may not use is never offered in that caller's runs.",
	"tools.subagents": "Which tools subagents get: `inherit` (the caller's tools that need no approval), `none`, or " +
		"globs over offered names (the caller's tools matching one, those needing approval included).",
	"tools.approval_ttl": "How long an approval card waits for a decision; past it the call is denied.",
	"tools.call_timeout": "The longest one tool call may take (a server's `call_timeout` overrides it).",
	"tools.connect_timeout": "The longest one connection attempt to a server may take, its tool list included; " +
		"a server that is down is retried with backoff.",
	"tools.max_result_bytes": "How much of one tool result the model reads; the rest is cut with a note saying so.",
	"tools.identity_key": "HMAC-SHA256 key that signs the identity headers sent to HTTP tool servers " +
		"(`X-Switchboard-Signature`), so a server can verify who asks and that Switchboard sent it; " +
		"unset, the headers go unsigned.",

	"log.level":  "`debug`, `info`, `warn` or `error`.",
	"log.format": "`text` or `json`.",
}
