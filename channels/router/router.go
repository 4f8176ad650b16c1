package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// Access policies (access.<platform>.policy).
const (
	PolicyOpen      = "open"
	PolicyAllowlist = "allowlist"
)

// AccessPolicy says who may talk to the bot on one platform: anyone (PolicyOpen) or only the
// channel_user_ids in Allow (PolicyAllowlist); DM says whether direct messages are answered.
// Admins are always allowed, DMs included; runtime `allow`/`deny` decisions of admins override
// the policy.
type AccessPolicy struct {
	Policy string
	Allow  []string
	DM     bool
}

// Router defaults applied to zero Options fields.
const (
	DefaultMaxMessageChars = 8000
	DefaultDedupeTTL       = 24 * time.Hour
	DefaultThreadMemory    = 7 * 24 * time.Hour
	DefaultPendingTTL      = 15 * time.Second
)

// Options configure a Router. Queue, Signer, Inbox, Clarifications and Threads are required.
type Options struct {
	Queue  Queue
	Signer Signer
	// Inbox, Clarifications and Threads are the conversation state the router reads and writes:
	// a threads.Store's Inbox, Clarifications and Conversations.
	Inbox          Inbox
	Clarifications Clarifications
	Threads        Threads
	// Access is the policy per platform (conv.Key.Platform); a platform missing here is open,
	// DMs included.
	Access map[string]AccessPolicy
	// Admins are the channel_user_ids with admin rights, per platform.
	Admins map[string][]string
	// MaxMessageChars bounds a message's text in characters; longer ones get a polite refusal.
	MaxMessageChars int
	// DedupeTTL is how long an event id is remembered (default 24h).
	DedupeTTL time.Duration
	// PendingTTL is how long an event's claim lasts while the event is being handled (default
	// 15 s): a redelivery meanwhile is refused for the platform to retry, and a claim a failed
	// handling could not give back (Redis unreachable), or a process killed while handling the
	// event left, blocks another process's redelivery — the chat's silence — no longer than
	// this. Handling takes a round trip or two; one slower than this may meet a redelivery
	// handled at the same time, whose run the run's mark (EnqueueOnce) still queues once.
	PendingTTL time.Duration
	// ThreadMemory is how long the router remembers a thread it answered in, so follow-ups
	// there need no mention (default 7 days).
	ThreadMemory time.Duration
	// ActionKey verifies the interactive ids that come back on clicks (the key delivery signs
	// with).
	ActionKey render.Key
	// Workers is shown by `stats` (the pool's worker count in this process).
	Workers int
	// Tools answers /tools (nil: no tools are configured).
	Tools ToolsInfo
	// Places answers /profile and bounds /model (nil: no profiles are configured).
	Places  Places
	Logger  *slog.Logger
	Metrics Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Router is the platform-neutral intake: it turns inbound messages into signed, queued runs,
// answers commands, and routes clarification answers (clicks and typed replies). It implements
// Handler and is safe for concurrent use. Its text replies to messages (refusals, notices,
// answers to text commands) are sent after HandleInbound returns, one conversation's in order,
// so that a platform's ack waits only for the durable enqueue; Close waits for them.
type Router struct {
	opt     Options
	log     *slog.Logger
	m       Metrics
	now     func() time.Time
	owed    *owedClaims
	replies *kit.Followups

	// The router's other jobs, each with its own methods: commands, clarification answers
	// (forms), approval decisions.
	cmd commands
	ans answers
	apv approvals
}

// commands answers the slash and text commands.
type commands struct{ r *Router }

// answers takes the answers to a clarification's form: clicks, modal submissions and typed
// replies, a field at a time, until the answer is complete and queued.
type answers struct{ r *Router }

// approvals takes the decisions on tool calls waiting for approval, once, from whoever may
// decide.
type approvals struct{ r *Router }

var _ channels.Handler = (*Router)(nil)

// New checks opt and returns a router.
func New(opt Options) (*Router, error) {
	if opt.Queue == nil || opt.Signer == nil || opt.Inbox == nil || opt.Clarifications == nil || opt.Threads == nil {
		return nil, errors.New("channels: a router needs a queue, a signer and a thread store")
	}
	if opt.MaxMessageChars <= 0 {
		opt.MaxMessageChars = DefaultMaxMessageChars
	}
	if opt.DedupeTTL <= 0 {
		opt.DedupeTTL = DefaultDedupeTTL
	}
	if opt.PendingTTL <= 0 {
		opt.PendingTTL = DefaultPendingTTL
	}
	if opt.ThreadMemory <= 0 {
		opt.ThreadMemory = DefaultThreadMemory
	}
	for p, a := range opt.Access {
		if a.Policy != PolicyOpen && a.Policy != PolicyAllowlist {
			return nil, fmt.Errorf("channels: access.%s.policy %q is not %q or %q", p, a.Policy, PolicyOpen, PolicyAllowlist)
		}
	}
	r := &Router{opt: opt, log: opt.Logger, m: opt.Metrics, now: opt.Now, owed: newOwedClaims(), replies: kit.NewFollowups()}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.m == nil {
		r.m = nopMetrics{}
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.cmd, r.ans, r.apv = commands{r}, answers{r}, approvals{r}
	return r, nil
}

// User-facing replies of the router.
const (
	msgBusy        = "I'm busy with earlier messages in this chat — try again in a moment."
	msgPaused      = "The bot is paused by an admin."
	msgNotAllowed  = "Sorry, you are not allowed to use this bot. An admin can allow your id: %s"
	msgDMDisabled  = "Sorry, I don't answer direct messages here. Please mention me in a group."
	msgTooLong     = "Sorry, that message is too long (%d characters; the limit is %d). Please shorten it."
	msgForeign     = "This question is for someone else."
	msgExpired     = "This question has expired."
	msgNotOpen     = "This question is no longer open."
	msgAnswered    = "This question was already answered."
	msgBadButton   = "This button is not valid."
	msgStaleButton = "This button no longer does anything."
	msgTypeAnswer  = "Please type your answer as a reply."
	msgFailed      = "Sorry, something went wrong. Please try again."
)

func eventKey(in channels.Inbound) string { return "event:" + in.Conv.Platform + ":" + in.EventID }
func threadKey(c conv.Key) string {
	return "thread:" + c.String()
}
func partialKey(formID string) string { return "partial:" + formID }

// HandleInbound routes one inbound event: dedupe, bot-loop protection, access, gating, size,
// commands, clarification answers, then a signed envelope on the queue. It returns nil when the
// event was handled or deliberately refused (every refusal is a reply or a logged, counted
// decision), and an error when it could not be handled; the event's dedupe claim is then
// released so a redelivery is handled afresh.
//
// What routing needs from Redis — the dedupe claim, the runtime access lists, the open question
// of the conversation, whether the bot is in the message's thread, and the record of the message
// a run answers — is one round trip (threads.Inbox.Intake).
func (r *Router) HandleInbound(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
	if in.Conv.Platform == "" {
		in.Conv.Platform = ch.Name()
	}
	platform := in.Conv.Platform
	r.m.Inbound(platform)
	if in.FromBot {
		r.refuse(platform, "bot", "ignoring a message from a bot", in)
		return nil
	}
	it, req := r.intakeRequest(in)
	res, err := r.opt.Inbox.Intake(ctx, req)
	if err != nil {
		if req.ClaimKey != "" {
			// The claim may have been taken though its reply was lost: the redelivery to this
			// process takes it again with the same token.
			r.owed.keep(req.ClaimKey, req.ClaimToken)
		}
		return fmt.Errorf("channels: intake of event %s: %w", in.EventID, err)
	}
	if req.ClaimKey != "" && (res.Seen || !res.Claimed) {
		if res.ClaimPending && !res.Seen {
			// Another delivery is being handled, or one failed and could not give its claim back
			// (Redis went away): not known to be handled, so the platform must try again.
			r.log.Debug("channels: event being handled by another delivery; refused for redelivery", "platform", platform, "event", in.EventID)
			return fmt.Errorf("channels: event %s: %w", in.EventID, ErrEventPending)
		}
		r.m.DedupeHit(platform)
		r.log.Debug("channels: duplicate event ignored", "platform", platform, "event", in.EventID)
		r.owed.forget(req.ClaimKey)
		return nil
	}
	it.res = res
	err = r.route(withClaim(ctx, it.claim), ch, in, it)
	if req.ClaimKey == "" {
		return err
	}
	bg := context.WithoutCancel(ctx)
	switch {
	case err != nil:
		// Give the claim back so a redelivery is handled afresh. The run's own mark (EnqueueOnce)
		// says whether it was queued after all, so releasing never lets an event run twice.
		if rerr := r.opt.Inbox.ReleaseClaim(bg, req.ClaimKey, req.ClaimToken); rerr != nil {
			// Redis is unreachable: the redelivery to this process retakes the claim with the
			// same token; one to another process waits for the pending claim to expire.
			r.owed.keep(req.ClaimKey, req.ClaimToken)
			r.log.Warn("channels: giving back the dedupe claim failed; a redelivery here takes it again, elsewhere after it expires",
				"event", in.EventID, "expires_in", r.opt.PendingTTL, "err", rerr)
		}
	case it.claim.queued:
		r.owed.forget(req.ClaimKey) // the run's mark dedupes the event from now on
	default:
		r.owed.forget(req.ClaimKey)
		if cerr := r.opt.Inbox.CompleteClaim(bg, req.ClaimKey, req.ClaimToken, r.opt.DedupeTTL); cerr != nil {
			r.log.Warn("channels: completing the dedupe claim failed; a redelivery after it expires is handled again",
				"event", in.EventID, "expires_in", r.opt.PendingTTL, "err", cerr)
		}
	}
	return err
}

// intake is what the router knows of an event before routing it.
type intake struct {
	admin bool
	res   threads.IntakeResult
	claim *eventClaim // nil when the event has no id
}

// intakeRequest says what to claim, read and write for in in one round trip.
func (r *Router) intakeRequest(in channels.Inbound) (intake, threads.IntakeRequest) {
	var it intake
	var req threads.IntakeRequest
	if in.EventID != "" {
		key := eventKey(in)
		req.ClaimKey, req.ClaimTTL, req.ClaimToken = key, r.opt.PendingTTL, r.owed.token(key)
		it.claim = &eventClaim{key: key}
		if !in.Conv.IsZero() && in.Conv.Chat != "" {
			req.SeenKey = r.opt.Queue.SeenKey(in.Conv, key)
		}
	}
	user := in.Identity.ChannelUserID
	if user == "" || in.Conv.Chat == "" {
		return it, req // refused in route; only the claim is needed
	}
	it.admin = in.PlatformAdmin || r.isAdmin(in.Conv.Platform, user)
	if !it.admin {
		req.Platform, req.UserID = in.Conv.Platform, user
	}
	if in.Interaction != nil {
		return it, req
	}
	req.ConvKey = in.Conv.String()
	if !in.Direct && !in.AddressesBot && in.Command == "" && in.Conv.Thread != "" {
		req.MarkedKey = threadKey(in.Conv)
	}
	return it, req
}

func (r *Router) refuse(platform, reason, what string, in channels.Inbound) {
	r.m.Refused(platform, reason)
	r.log.Info("channels: "+what, "platform", platform, "reason", reason, "user", in.Identity.ChannelUserID, "conv", in.Conv.String(), "event", in.EventID)
}

func (r *Router) isAdmin(platform, userID string) bool {
	return userID != "" && slices.Contains(r.opt.Admins[platform], userID)
}

// allowed applies the access policy, with the runtime decisions the intake read; admins pass
// everything.
func (r *Router) allowed(in channels.Inbound, it intake) (ok bool, reason string) {
	if it.admin {
		return true, ""
	}
	platform, user := in.Conv.Platform, in.Identity.ChannelUserID
	pol, known := r.opt.Access[platform]
	if !known {
		pol = AccessPolicy{Policy: PolicyOpen, DM: true}
	}
	switch {
	case it.res.Denied:
		return false, "not_allowed"
	case !it.res.Allowed && pol.Policy == PolicyAllowlist && !slices.Contains(pol.Allow, user):
		return false, "not_allowed"
	case in.Direct && !pol.DM:
		return false, "dm_disabled"
	}
	return true, ""
}

func (r *Router) route(ctx context.Context, ch channels.Channel, in channels.Inbound, it intake) error {
	platform, user := in.Conv.Platform, in.Identity.ChannelUserID
	if user == "" || in.Conv.Chat == "" {
		r.refuse(platform, "no_identity", "ignoring an event without a sender or a chat", in)
		return nil
	}
	admin := it.admin
	ok, reason := r.allowed(in, it)
	if !ok {
		r.refuse(platform, reason, "refusing a user the access policy does not admit", in)
		// Tell the user only where it does not spam a group: privately, or in a DM. A native
		// command's reply is private to the one who ran it (Slack's ephemeral message, Discord's
		// ephemeral response).
		switch {
		case in.Interaction != nil:
			r.respond(ctx, ch, in.Interaction, "Sorry, you are not allowed to use this bot.")
		case in.Direct && reason == "dm_disabled":
			r.reply(ctx, ch, in, msgDMDisabled)
		case in.Direct, in.Command != "":
			r.reply(ctx, ch, in, fmt.Sprintf(msgNotAllowed, user))
		}
		return nil
	}
	if in.Interaction != nil {
		return r.ans.interaction(ctx, ch, in, admin)
	}

	name, args, isCmd := in.Command, in.Args, in.Command != ""
	if !isCmd {
		name, args, isCmd = ParseCommand(in.Text)
	} else {
		name = strings.ToLower(strings.TrimPrefix(name, "/"))
	}

	conv := in.Conv.String()
	pending := it.res.Pending
	forUser := it.res.HasPending && (pending.AllowedUserID == user || (pending.AllowedUserID == threads.AnyoneMayAnswer && admin))

	if !in.Direct && !in.AddressesBot && in.Command == "" && !forUser {
		if !it.res.IsMarked { // the bot is not in the message's thread (or it has none)
			r.m.Refused(platform, "not_addressed")
			r.log.Debug("channels: group message not addressed to the bot", "platform", platform, "conv", conv, "event", in.EventID)
			return nil
		}
	}
	if n := utf8.RuneCountInString(in.Text); n > r.opt.MaxMessageChars {
		r.refuse(platform, "too_long", "refusing an oversized message", in)
		r.reply(ctx, ch, in, fmt.Sprintf(msgTooLong, n, r.opt.MaxMessageChars))
		return nil
	}
	if isCmd {
		return r.cmd.command(ctx, ch, in, name, args, admin)
	}
	if forUser && strings.TrimSpace(in.Text) != "" {
		return r.ans.typedAnswer(ctx, ch, in, pending, admin)
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Files) == 0 {
		r.refuse(platform, "empty", "ignoring an empty message", in)
		return nil
	}
	env := r.envelope(in, admin, runs.KindMessage)
	env.Text, env.Attachments = in.Text, in.Files
	refusal, err := r.enqueue(ctx, ch, in, env)
	if refusal != "" {
		r.reply(ctx, ch, in, refusal)
	}
	return err
}

func (r *Router) envelope(in channels.Inbound, admin bool, kind runs.Kind) *runs.Envelope {
	id := in.Identity
	if id.Platform == "" {
		id.Platform = in.Conv.Platform
	}
	id.Admin = admin
	return &runs.Envelope{RunID: runs.NewRunID(), Kind: kind, Conv: in.Conv, Identity: id, Direct: in.Direct, ReplyTo: in.MessageID, CreatedAt: r.now()}
}

// enqueue signs and queues env. Busy and paused are counted and logged, and come back as the
// polite refusal to show the user; other failures are errors.
func (r *Router) enqueue(ctx context.Context, ch channels.Channel, in channels.Inbound, env *runs.Envelope) (refusal string, err error) {
	platform := in.Conv.Platform
	r.opt.Signer.Sign(env)
	claim := claimOf(ctx)
	if claim != nil && !claim.queued && env.Conv == in.Conv {
		// The event's first run carries its mark, set in the step that queues it.
		err = r.opt.Queue.EnqueueOnce(ctx, env, claim.key, r.opt.DedupeTTL)
	} else {
		err = r.opt.Queue.Enqueue(ctx, env)
	}
	var busy *runs.BusyError
	switch {
	case errors.Is(err, runs.ErrDuplicate):
		r.m.DedupeHit(platform)
		r.log.Debug("channels: the event's run is queued already; ignored", "platform", platform, "event", in.EventID)
		claim.queued = true
		return "", nil
	case errors.As(err, &busy):
		r.refuse(platform, "busy", "refusing a message: the queue is full", in)
		return msgBusy, nil
	case errors.Is(err, runs.ErrPaused):
		r.refuse(platform, "paused", "refusing a message: intake is paused", in)
		return msgPaused, nil
	case err != nil:
		return "", fmt.Errorf("channels: queueing run %s: %w", env.RunID, err)
	}
	if claim != nil {
		claim.queued = true
	}
	// The working signal goes out at receipt, even when the run waits behind others in this
	// conversation; delivery's placeholder follows when a worker starts it.
	if t, ok := ch.(channels.Typer); ok {
		if err := t.Typing(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}); err != nil {
			r.log.Debug("channels: typing signal failed", "conv", in.Conv.String(), "err", err)
		}
	}
	if in.Conv.Thread != "" {
		if err := r.opt.Inbox.Mark(ctx, threadKey(in.Conv), []byte("1"), r.opt.ThreadMemory); err != nil {
			r.log.Warn("channels: remembering the thread failed", "conv", in.Conv.String(), "err", err)
		}
	}
	r.log.Debug("channels: run queued", "run", env.RunID, "kind", env.Kind, "conv", in.Conv.String())
	return "", nil
}

// reply sends text to the conversation, as a reply to the inbound message. A reply to a message
// goes after HandleInbound returns: it may wait out rate limits for a minute, no work the
// platform's ack waits for. A reply to a native command or an interaction goes before: the
// adapter acknowledged those on its own clock already, and may answer with this very reply
// (Discord fills a command's deferred response with it).
func (r *Router) reply(ctx context.Context, ch channels.Channel, in channels.Inbound, text string) {
	send := func(ctx context.Context) {
		err := channels.RetryRateLimited(ctx, time.Minute, 3, func(ctx context.Context) error {
			_, err := ch.Send(ctx, channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: text})
			return err
		})
		if err != nil {
			r.m.OutboundError(in.Conv.Platform, "send_failed")
			r.log.Warn("channels: sending a reply failed", "platform", in.Conv.Platform, "conv", in.Conv.String(), "err", err)
		}
	}
	if in.Command != "" || in.Interaction != nil {
		send(ctx)
		return
	}
	r.replies.Go(ctx, in.Conv.String(), send)
}

// Close waits until the replies being sent are sent, or ctx ends (then they are cut short).
// Replies after Close are sent before HandleInbound returns. Call it once intake has stopped,
// before the channels stop.
func (r *Router) Close(ctx context.Context) error { return r.replies.Close(ctx) }

// respond answers an interaction privately when the channel can, else in the conversation.
func (r *Router) respond(ctx context.Context, ch channels.Channel, it *channels.Interaction, notice string) bool {
	ir, ok := ch.(channels.InteractionResponder)
	if !ok {
		return false
	}
	if err := ir.RespondInteraction(ctx, it, notice); err != nil {
		r.log.Warn("channels: answering an interaction failed", "platform", ch.Name(), "err", err)
	}
	return true
}
