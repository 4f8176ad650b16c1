// Package channels is the platform-neutral side of chat: the inbound message every adapter
// produces, the outbound operations every adapter performs, the small Channel interface adapters
// implement (with one-method capability interfaces for what only some platforms can do), the
// router that turns inbound messages into signed runs, and the delivery of run events back to
// the conversation.
//
// Adapters (adapters/<platform>) know their SDK, this package, render and core/conv (the
// conversation key, identity and attachment they fill in); nothing here knows a platform.
//
// Imports (docs/architecture.md, "Folders and what each imports"): besides core/runs and render,
// core/threads: the router and delivery keep their state in the thread store — inbound
// dedupe claims, pending clarifications and partial form answers, per-thread settings (`model`),
// `new` (Reset), runtime allow/deny lists, threads the bot is in, and the outbound records that
// make delivery replay-safe.
package channels

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// Channel is one connected platform. Start begins receiving and hands every inbound message to
// h; it returns once the channel is receiving (or failed to), and the channel keeps receiving
// until Stop or until ctx ends. ctx bounds the intake only: once it ends the channel stops
// taking events in as IntakeStopper's StopIntake would (without waiting for the events being
// handed over: Stop does), Ready fails, and Send keeps working until Stop. Start's errors
// start with the channel's name ("telegram: …") and wrap ErrUnauthorized when the platform
// refused the credentials. Stop stops intake and closes connections; it is safe to call more
// than once. Send posts a message and returns a reference for later edits.
type Channel interface {
	Name() string
	Start(ctx context.Context, h Handler) error
	Stop(ctx context.Context) error
	Send(ctx context.Context, to Target, m Message) (MessageRef, error)
}

// Handler receives inbound messages; the router implements it. HandleInbound returns once the
// message is durably accepted (queued) or refused; an error means the adapter should let the
// platform redeliver (or, for platforms that cannot, log it).
type Handler interface {
	HandleInbound(ctx context.Context, ch Channel, in Inbound) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ch Channel, in Inbound) error

// HandleInbound calls f.
func (f HandlerFunc) HandleInbound(ctx context.Context, ch Channel, in Inbound) error {
	return f(ctx, ch, in)
}

// FileSender can post a file into a conversation (Telegram sendDocument, Slack's external
// upload, a Discord message with an attachment). Delivery sends the rest of an answer too long
// for DeliveryOptions.MaxAnswerMessages this way, to the answer's own target (its ReplyTo too):
// an adapter refuses, with an error, a target a file cannot reach as the answer did (a Slack
// answer only its asker sees), and delivery then sends the rest as messages there. The ref
// names the message that carries the file (on Slack, the file).
type FileSender interface {
	SendFile(ctx context.Context, to Target, f File) (MessageRef, error)
}

// File is a document to post with FileSender: Name and Data; Caption, plain text the adapter may
// cut to the platform's limit; and Key, as Message.Key, naming the post across attempts of its
// run, so a platform with idempotent sends (KeyedSender) posts a file resent with its key once.
type File struct {
	Name    string
	Data    []byte
	Caption string
	Key     string
}

// FileFetcher is a Channel that can download the files users send it, with the platform's
// own authentication (Slack: the bot token of the conversation's workspace; Telegram:
// getFile; Discord: the attachment's CDN URL). A file larger than limit is refused with an
// error wrapping conv.ErrFileTooLarge — before the download when the platform states the
// size, else as soon as more than limit bytes arrive. Errors never contain the URL or a token.
type FileFetcher interface {
	FetchFile(ctx context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error)
}

// Pager reports how many platform messages Send would post for m (a long card or text is split
// to the platform's limit). Delivery keeps an answer within DeliveryOptions.MaxAnswerMessages
// with it; a channel without it is never asked to.
type Pager interface {
	Pages(m Message) (int, error)
}

// Editor can replace a sent message in place.
type Editor interface {
	Edit(ctx context.Context, ref MessageRef, m Message) (MessageRef, error)
}

// Deleter can delete a sent message (used to remove a placeholder the answer did not replace).
type Deleter interface {
	Delete(ctx context.Context, ref MessageRef) error
}

// KeyedSender is a Channel whose Send is idempotent per Message.Key for a while: a second Send
// with the key of one already posted returns that message instead of posting another (Discord's
// nonce with enforce_nonce). KeyWindow is how long the platform remembers a key. A replay that
// finds a send's write-ahead intent younger than that resends without counting a possible
// double.
type KeyedSender interface {
	KeyWindow() time.Duration
}

// SentFinder can find a message sent with a Message.Key (Slack: the key in the message's
// metadata, looked up in the conversation's history). A replay that finds a send's write-ahead
// intent without its record asks it first: a message found, sent at since or later, is taken
// as the one sent (recorded, edited later) instead of sending it again. found is true only
// when the whole message (every piece) is there.
type SentFinder interface {
	FindSent(ctx context.Context, to Target, key string, since time.Time) (ref MessageRef, found bool, err error)
}

// Typer can show that the bot is working ("typing…"). The signal is short-lived; callers repeat
// it while a run works. to.ReplyTo names the message being worked on when it is known, so a
// platform can tell a signal that arrives after that message's answer (Slack's thread status).
type Typer interface {
	Typing(ctx context.Context, to Target) error
}

// Reactor can put a reaction on a message (e.g. 👀 on the one being worked on).
type Reactor interface {
	React(ctx context.Context, ref MessageRef, emoji string) error
}

// FormOpener can open a native form (Slack modal, Discord modal) in answer to an interaction.
type FormOpener interface {
	OpenForm(ctx context.Context, in *Interaction, form render.Form) error
}

// CommandRegistrar can register native slash commands with the platform.
type CommandRegistrar interface {
	RegisterCommands(ctx context.Context, cmds []CommandSpec) error
}

// InteractionResponder can answer an interaction (a button click, a selection) privately to the
// user who made it; every interaction is answered promptly, with an empty notice when there is
// nothing to say.
type InteractionResponder interface {
	RespondInteraction(ctx context.Context, in *Interaction, notice string) error
}

// Readiness reports whether the channel's own inbound loop is connected and receiving — not
// whether outbound calls succeed. /readyz uses it.
type Readiness interface {
	Ready() error
}

// Inbound is one message or interaction from a platform, normalized.
type Inbound struct {
	// EventID is the platform's id for this delivery, unique per platform ("update:123"); the
	// router dedupes on it.
	EventID string
	Conv    conv.Key
	// Identity is the sender as the adapter derived it from the event. Admin is never set by
	// adapters; the router decides it from configuration.
	Identity conv.Identity
	Text     string
	// AddressesBot: the message mentions the bot, replies to it, or is in a thread the bot is in.
	AddressesBot bool
	// Direct: a private chat with the bot.
	Direct bool
	// FromBot: the sender is a bot (the bot itself included).
	FromBot bool
	// PlatformAdmin says the platform itself reported that the sender holds the permission the
	// operator made an admin right (discord.admin_permission, in the member permissions Discord
	// sends with a slash command or click). Adapters set it only from what the platform said
	// about the sender, never from message content; the router then takes the sender as an
	// admin, as one listed in admins.<platform>.
	PlatformAdmin bool
	// MessageID is the platform id of this message; ReplyTo the id of the message it replies to.
	MessageID string
	ReplyTo   string
	Files     []conv.Attachment
	// Command is set when the platform delivered a native command (Slack or Discord slash
	// command); Args are its words. Text commands ("/new") are parsed by the router.
	Command string
	Args    []string
	// Interaction is set for a click or a selection on something the bot sent.
	Interaction *Interaction
	ReceivedAt  time.Time
}

// Interaction is a click on a button, a choice in a select or a submitted form.
type Interaction struct {
	// ID and Token are what the platform needs to answer the interaction (Telegram callback
	// query id; Discord interaction id and token; Slack trigger id and response URL).
	ID    string
	Token string
	// Data is the interactive id the bot rendered (render.EncodeAction), returned by the click.
	Data string
	// Values are what was chosen or typed (select values, modal inputs by field id).
	Values map[string][]string
	// Message is the message the clicked element belongs to.
	Message MessageRef
}

// Target is where a message goes: a conversation, optionally as a reply to a message.
type Target struct {
	Conv    conv.Key
	ReplyTo string
	// User is the channel_user_id of the person a run answers, when delivery knows it (a
	// platform that streams to one recipient needs it); "" otherwise.
	User string
}

// Message is one outbound message: a card, or markdown text when Card is nil. Adapters render
// cards with render and fall back to Text (or the card's plain rendering) when the platform
// refuses a card.
type Message struct {
	Card *render.Card
	Text string
	// Key, when set, names this message across attempts of its run (run id and step): a
	// platform with idempotent sends (Discord's nonce with enforce_nonce) uses it, so a replay's
	// resend returns the message already posted instead of posting it twice.
	Key string
}

// MessageRef names a sent message. A long message may have been split into several platform
// messages: IDs lists them in order, the first being the one edits go to.
type MessageRef struct {
	Conv conv.Key
	IDs  []string
}

// ID is the first platform message id, or "" when nothing was sent.
func (r MessageRef) ID() string {
	if len(r.IDs) == 0 {
		return ""
	}
	return r.IDs[0]
}

// CommandSpec is a command for a platform's command menu.
type CommandSpec struct {
	Name        string
	Description string
	AdminOnly   bool
}

// RateLimitError says the platform asked to wait before trying again. Adapters return it (after
// any retries of their own); delivery waits RetryAfter and tries again.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("channels: rate limited, retry after %s", e.RetryAfter)
}

// ErrCardRefused means the platform refused the card (bad blocks, too large); delivery falls back
// to plain text.
var ErrCardRefused = errors.New("channels: the platform refused the card")

// ErrMessageGone means the message to edit or delete no longer exists; delivery sends a new one.
var ErrMessageGone = errors.New("channels: the message no longer exists")

// ErrUnreachable means the bot can no longer write to the conversation: the user blocked it, it
// was removed from the group, the chat or topic is gone, or it lost the right to post. Retrying
// cannot help, so delivery gives the message up (counted and logged) instead of failing the run.
var ErrUnreachable = errors.New("channels: the conversation cannot be reached")

// ErrUnauthorized means the platform refused the bot's credentials (a wrong, revoked or
// mistyped token). Retrying cannot help; the operator must fix the configuration.
var ErrUnauthorized = errors.New("the platform refused the bot's credentials")

// ErrNotModified means an edit changed nothing; callers treat it as success.
var ErrNotModified = errors.New("channels: the message was not modified")

// FinalEditor is an Editor with a separate, unthrottled edit for a run's closing message
// (Telegram's adapter has one). Delivery prefers it for terminal events.
type FinalEditor interface {
	EditFinal(ctx context.Context, ref MessageRef, m Message) (MessageRef, error)
}

// IntakeStopper is a channel that can stop taking events in while it can still send. Shutdown
// calls it before draining the workers, so an intake held through a Lease passes to another
// process at once instead of after the drain.
type IntakeStopper interface {
	StopIntake(ctx context.Context) error
}
