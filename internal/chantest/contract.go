package chantest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// Subject is an adapter under the contract every adapter keeps (RunContract): how to make its
// Channel against its platform's fake, and how to make that fake do what each case needs. Its
// test package builds it (a Subject may reach the adapter's unexported test hooks: clocks,
// sleeps).
type Subject struct {
	// Name is the platform's name, which starts the adapter's errors ("telegram: …").
	Name string
	// New makes a Channel on a fresh fake, not started, the fake set to treat the Channel as
	// p says from its Start on. The Channel must implement channels.Readiness and
	// channels.IntakeStopper. The suite stops every Channel it starts.
	New func(t *testing.T, p Platform) *Rig
}

// Platform is how the fake treats a Channel from its Start on.
type Platform int

// The platforms a Subject makes.
const (
	// PlatformUp serves the Channel as the real platform would.
	PlatformUp Platform = iota
	// PlatformRefusesToken refuses the Channel's credentials (a wrong or revoked token).
	PlatformRefusesToken
	// PlatformDown cannot be reached at all.
	PlatformDown
)

// Rig is one Channel of a Subject and the controls of its fake. With PlatformRefusesToken and
// PlatformDown only Channel, Secrets and Logs are needed.
type Rig struct {
	Channel channels.Channel
	// Secrets are the credentials the Channel was given: never in an error or a log line.
	Secrets []string
	// Logs is everything the Channel logged so far.
	Logs func() string
	// Target is a conversation Send reaches.
	Target channels.Target
	// Blocked arms the fake to answer sends to a conversation as the platform does when the
	// user blocked the bot or removed it, and returns that conversation.
	Blocked func() channels.Target
	// RateLimitNextSend arms the fake to answer the next message posted with a 429 asking to
	// wait retryAfter (whole seconds).
	RateLimitNextSend func(retryAfter time.Duration)
	// Push makes the platform deliver one message that the Channel hands to its Handler.
	Push func()
	// IntakeClosed reports whether the Channel's intake has closed for good at the platform (no
	// socket or gateway connection open, no long poll in flight or to come), whoever stopped
	// it: StopIntake, or the end of Start's ctx.
	IntakeClosed func() bool
	// Held is how many pushed messages the platform holds without having delivered them to
	// the Channel.
	Held func() int
	// GoAway takes the platform away from the Channel's intake as the adapter's Ready defines
	// it (a silent socket, a gateway gone quiet, failing polls), moving any clock the adapter
	// reads past its bound; Ready must then fail.
	GoAway func(t *testing.T)
}

// contractWait bounds each wait of the suite.
const contractWait = 20 * time.Second

// RunContract runs the adapter contract on s, each case a subtest on a fresh fake:
//
//   - a refused token at Start is an error wrapping channels.ErrUnauthorized; an unreachable
//     platform is an error that does not; neither shows a credential, in the error or the logs;
//   - a Send to a blocked or removed conversation is channels.ErrUnreachable; a 429 on Send is
//     a *channels.RateLimitError carrying the Retry-After, returned without waiting it out;
//   - Stop without Start returns; a second Start is refused; Stop returns; Start after Stop is
//     refused;
//   - after StopIntake no inbound message reaches the Handler, while Send still works;
//   - once Start's ctx ends the intake stops as at StopIntake — closed at the platform, no
//     inbound message reaches the Handler, Ready fails — while Send still works, and a
//     StopIntake and a Stop after it return nil;
//   - Ready fails before Start, holds once the intake is connected, and fails after the platform
//     went away and after Stop.
func RunContract(t *testing.T, s Subject) {
	t.Run("RefusedTokenAtStartIsUnauthorized", func(t *testing.T) { contractRefusedToken(t, s) })
	t.Run("PlatformDownAtStartIsNotUnauthorized", func(t *testing.T) { contractPlatformDown(t, s) })
	t.Run("SendToBlockedConversationIsUnreachable", func(t *testing.T) { contractBlocked(t, s) })
	t.Run("RateLimitedSendReturnsRetryAfter", func(t *testing.T) { contractRateLimited(t, s) })
	t.Run("StartsOnceAndStops", func(t *testing.T) { contractStartStop(t, s) })
	t.Run("StopIntakeStopsInboundWhileSendWorks", func(t *testing.T) { contractStopIntake(t, s) })
	t.Run("StartContextEndStopsInboundWhileSendWorks", func(t *testing.T) { contractStartContextEnd(t, s) })
	t.Run("ReadyFollowsTheIntake", func(t *testing.T) { contractReady(t, s) })
}

// start starts r's Channel with h and stops it when the test ends.
func start(t *testing.T, r *Rig, h channels.Handler) {
	t.Helper()
	if err := r.Channel.Start(Context(t), h); err != nil {
		t.Fatalf("Start: %v\n%s", err, r.Logs())
	}
	stopAtEnd(t, r)
}

func stopAtEnd(t *testing.T, r *Rig) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), contractWait)
		defer cancel()
		if err := r.Channel.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

// noSecret fails t if err's text or the logs show one of r's secrets.
func noSecret(t *testing.T, r *Rig, err error) {
	t.Helper()
	for _, sec := range r.Secrets {
		if sec == "" {
			continue
		}
		if err != nil && strings.Contains(err.Error(), sec) {
			t.Errorf("the error shows a credential: %v", err)
		}
		if strings.Contains(r.Logs(), sec) {
			t.Errorf("the logs show a credential:\n%s", r.Logs())
		}
	}
}

func contractRefusedToken(t *testing.T, s Subject) {
	r := s.New(t, PlatformRefusesToken)
	stopAtEnd(t, r)
	err := r.Channel.Start(Context(t), NewCounter(0))
	if !errors.Is(err, channels.ErrUnauthorized) {
		t.Fatalf("Start with a refused token = %v, want an error wrapping channels.ErrUnauthorized", err)
	}
	if !strings.HasPrefix(err.Error(), s.Name+": ") {
		t.Errorf("Start's error %q does not start with %q", err, s.Name+": ")
	}
	noSecret(t, r, err)
}

func contractPlatformDown(t *testing.T, s Subject) {
	r := s.New(t, PlatformDown)
	stopAtEnd(t, r)
	err := r.Channel.Start(Context(t), NewCounter(0))
	if err == nil || errors.Is(err, channels.ErrUnauthorized) {
		t.Fatalf("Start with the platform down = %v, want an error that is not channels.ErrUnauthorized", err)
	}
	if !strings.HasPrefix(err.Error(), s.Name+": ") {
		t.Errorf("Start's error %q does not start with %q", err, s.Name+": ")
	}
	noSecret(t, r, err)
}

func contractBlocked(t *testing.T, s Subject) {
	r := s.New(t, PlatformUp)
	start(t, r, NewCounter(0))
	_, err := r.Channel.Send(Context(t), r.Blocked(), channels.Message{Text: "hello"})
	if !errors.Is(err, channels.ErrUnreachable) {
		t.Fatalf("Send to a blocked conversation = %v, want channels.ErrUnreachable", err)
	}
	noSecret(t, r, err)
}

func contractRateLimited(t *testing.T, s Subject) {
	r := s.New(t, PlatformUp)
	start(t, r, NewCounter(0))
	const retryAfter = 2 * time.Second
	r.RateLimitNextSend(retryAfter)
	began := time.Now()
	_, err := r.Channel.Send(Context(t), r.Target, channels.Message{Text: "hello"})
	took := time.Since(began)
	rl, ok := errors.AsType[*channels.RateLimitError](err)
	if !ok || rl.RetryAfter != retryAfter {
		t.Fatalf("Send answered 429 = %v, want a *channels.RateLimitError of %v", err, retryAfter)
	}
	if took >= retryAfter {
		t.Errorf("Send took %v: the adapter waited the rate limit out beneath delivery's retries", took)
	}
}

func contractStartStop(t *testing.T, s Subject) {
	idle := s.New(t, PlatformUp)
	ctx, cancel := context.WithTimeout(context.Background(), contractWait)
	defer cancel()
	if err := idle.Channel.Stop(ctx); err != nil {
		t.Fatalf("Stop without Start: %v", err)
	}
	r := s.New(t, PlatformUp)
	start(t, r, NewCounter(0))
	if err := r.Channel.Start(Context(t), NewCounter(0)); err == nil {
		t.Fatal("a second Start was accepted")
	}
	if err := r.Channel.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := r.Channel.Stop(ctx); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if err := r.Channel.Start(Context(t), NewCounter(0)); err == nil {
		t.Fatal("Start after Stop was accepted")
	}
}

func contractStopIntake(t *testing.T, s Subject) {
	r := s.New(t, PlatformUp)
	h := NewCounter(0)
	start(t, r, h)
	stopper, ok := r.Channel.(channels.IntakeStopper)
	if !ok {
		t.Fatalf("%T is not a channels.IntakeStopper", r.Channel)
	}
	r.Push()
	poll.Until(t, "the first message handed over", func() bool { return h.Count() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), contractWait)
	defer cancel()
	if err := stopper.StopIntake(ctx); err != nil {
		t.Fatalf("StopIntake: %v", err)
	}
	poll.Until(t, "the intake closed at the platform", r.IntakeClosed)
	held := r.Held()
	r.Push()
	poll.Until(t, "the message pushed after StopIntake held by the platform", func() bool { return r.Held() > held })
	if _, err := r.Channel.Send(Context(t), r.Target, channels.Message{Text: "still sending"}); err != nil {
		t.Fatalf("Send after StopIntake: %v", err)
	}
	if n := h.Count(); n != 1 {
		t.Fatalf("%d messages handed over, want only the one before StopIntake", n)
	}
	if err := stopper.StopIntake(ctx); err != nil {
		t.Fatalf("a second StopIntake: %v", err)
	}
}

// contractStartContextEnd: Start's ctx bounds the intake, and nothing else.
func contractStartContextEnd(t *testing.T, s Subject) {
	r := s.New(t, PlatformUp)
	h := NewCounter(0)
	startCtx, endStart := context.WithCancel(Context(t))
	defer endStart()
	if err := r.Channel.Start(startCtx, h); err != nil {
		t.Fatalf("Start: %v\n%s", err, r.Logs())
	}
	stopAtEnd(t, r)
	rd, ok := r.Channel.(channels.Readiness)
	if !ok {
		t.Fatalf("%T is not a channels.Readiness", r.Channel)
	}
	r.Push()
	poll.Until(t, "the first message handed over", func() bool { return h.Count() == 1 })
	endStart()
	poll.Until(t, "not ready once Start's context ended", func() bool { return rd.Ready() != nil })
	poll.Until(t, "the intake closed at the platform once Start's context ended", r.IntakeClosed)
	held := r.Held()
	r.Push()
	poll.Until(t, "the message pushed after Start's context ended held by the platform", func() bool { return r.Held() > held })
	if _, err := r.Channel.Send(Context(t), r.Target, channels.Message{Text: "still sending"}); err != nil {
		t.Fatalf("Send after Start's context ended: %v", err)
	}
	if n := h.Count(); n != 1 {
		t.Fatalf("%d messages handed over, want only the one before Start's context ended", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), contractWait)
	defer cancel()
	if stopper, ok := r.Channel.(channels.IntakeStopper); !ok {
		t.Errorf("%T is not a channels.IntakeStopper", r.Channel)
	} else if err := stopper.StopIntake(ctx); err != nil {
		t.Fatalf("StopIntake after Start's context ended: %v", err)
	}
	if err := r.Channel.Start(Context(t), NewCounter(0)); err == nil {
		t.Fatal("Start after Start's context ended was accepted")
	}
}

func contractReady(t *testing.T, s Subject) {
	r := s.New(t, PlatformUp)
	rd, ok := r.Channel.(channels.Readiness)
	if !ok {
		t.Fatalf("%T is not a channels.Readiness", r.Channel)
	}
	if err := rd.Ready(); err == nil {
		t.Fatal("ready before Start")
	}
	start(t, r, NewCounter(0))
	poll.Until(t, "ready once connected", func() bool { return rd.Ready() == nil })
	r.GoAway(t)
	poll.Until(t, "not ready once the platform went away", func() bool { return rd.Ready() != nil })
	ctx, cancel := context.WithTimeout(context.Background(), contractWait)
	defer cancel()
	if err := r.Channel.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := rd.Ready(); err == nil {
		t.Fatal("ready after Stop")
	}
}

// ClosedURL is an http URL nothing listens at (a port that was free a moment ago), for a
// Subject's PlatformDown.
func ClosedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
