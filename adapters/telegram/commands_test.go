package telegram

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

var menu = []channels.CommandSpec{{Name: "/new", Description: "Start over"}, {Name: "help", Description: "Help"}, {Name: "deadletters", AdminOnly: true}}

func assertMenu(t *testing.T, fake *telegramfake.Server) {
	t.Helper()
	got := fake.Commands()
	if len(got) != 2 || got[0].Command != "new" || got[1].Command != "help" {
		t.Fatalf("commands = %+v, want new and help", got)
	}
}

// TestRegisterCommandsRetriedInTheBackground proves a registration Telegram refuses for now — an
// outage past the call's own retries, a rate limit longer than the call waits — is retried in
// the background, waiting what Telegram asked, and ends with the menu set once.
func TestRegisterCommandsRetriedInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(fake *telegramfake.Server)
		sets  int             // setMyCommands calls in all
		waits []time.Duration // the background retry's
	}{
		{
			// The call tries a 5xx three times, then gives up; so does the first retry.
			name: "an outage",
			fault: func(fake *telegramfake.Server) {
				fake.FailNext("getMyCommands", 6, telegramfake.Fault{Status: http.StatusBadGateway})
			},
			sets: 1, waits: []time.Duration{regRetryMin, 2 * regRetryMin},
		},
		{
			// retry_after 120 s is past MaxRetryWait: the call returns at once, the retry waits it.
			name:  "rate limited for two minutes",
			fault: func(fake *telegramfake.Server) { fake.RateLimitStorm("setMyCommands", 1, 120) },
			sets:  2, waits: []time.Duration{2 * time.Minute},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			w := &chantest.Waits{}
			h.ch.reg.Wait = w.Wait
			tc.fault(h.fake)
			if err := h.ch.RegisterCommands(context.Background(), menu); err != nil {
				t.Fatalf("RegisterCommands: %v, want nil: the registration is retried", err)
			}
			poll.Until(t, "the menu set by the retry", func() bool {
				return strings.Contains(h.logs.String(), "telegram: commands registered after retrying")
			})
			assertMenu(t, h.fake)
			if n := h.fake.Count("setMyCommands"); n != tc.sets {
				t.Errorf("setMyCommands called %d times, want %d", n, tc.sets)
			}
			if got := w.All(); !slices.Equal(got, tc.waits) {
				t.Errorf("background waits %v, want %v", got, tc.waits)
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "telegram: registering commands failed; retrying in the background") {
				t.Errorf("the failure was not logged:\n%s", logs)
			}
			if strings.Contains(logs, h.fake.Token()) {
				t.Errorf("the token reached the log:\n%s", logs)
			}
		})
	}
}

// TestRegisterCommandsNotRetriedWhenRetryingCannotHelp proves a refusal of the list itself or of
// the token is returned at once and not retried.
func TestRegisterCommandsNotRetriedWhenRetryingCannotHelp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		fault  telegramfake.Fault
		code   int
	}{
		{name: "a bad list", method: "setMyCommands", fault: telegramfake.Fault{Status: http.StatusBadRequest, Description: "Bad Request: BOT_COMMAND_INVALID"}, code: http.StatusBadRequest},
		{name: "a revoked token", method: "getMyCommands", fault: telegramfake.Fault{Status: http.StatusUnauthorized, Description: "Unauthorized"}, code: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			w := &chantest.Waits{}
			h.ch.reg.Wait = w.Wait
			h.fake.FailNext(tc.method, 1, tc.fault)
			err := h.ch.RegisterCommands(context.Background(), menu)
			if err == nil {
				t.Fatal("RegisterCommands: nil, want the refusal")
			}
			if ae, ok := errors.AsType[*APIError](err); !ok || ae.Code != tc.code || ae.Method != tc.method {
				t.Errorf("err = %v, want the %s refusal (%d)", err, tc.method, tc.code)
			}
			if strings.Contains(err.Error(), h.fake.Token()) {
				t.Errorf("the token is in the error: %v", err)
			}
			if got := w.All(); len(got) != 0 {
				t.Errorf("background waits %v, want none", got)
			}
			if logs := h.logs.String(); strings.Contains(logs, "retrying in the background") {
				t.Errorf("a refusal retrying cannot help was retried:\n%s", logs)
			}
		})
	}
}

// TestRegistrationRetryEndsWithTheChannel proves Stop ends a retry still waiting (Stop waits for
// it, within the harness's deadline), and that a channel not started returns the failure.
func TestRegistrationRetryEndsWithTheChannel(t *testing.T) {
	fake := telegramfake.New(t)
	ch, logs := newChannel(t, fake, nil)
	fake.FailNext("getMyCommands", 3, telegramfake.Fault{Status: http.StatusServiceUnavailable})
	if err := ch.RegisterCommands(context.Background(), menu); err == nil {
		t.Fatal("RegisterCommands before Start: nil, want the failure")
	}
	if err := ch.Start(context.Background(), &recorder{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	ch.reg.Wait = func(ctx context.Context, _ time.Duration) error {
		once.Do(func() { close(waiting) })
		<-ctx.Done()
		return ctx.Err()
	}
	fake.FailNext("getMyCommands", 3, telegramfake.Fault{Status: http.StatusServiceUnavailable})
	if err := ch.RegisterCommands(context.Background(), menu); err != nil {
		t.Fatalf("RegisterCommands: %v, want nil: the registration is retried", err)
	}
	<-waiting
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ch.Stop(ctx); err != nil {
		t.Fatalf("Stop with a retry pending: %v", err)
	}
	if n := fake.Count("setMyCommands"); n != 0 {
		t.Errorf("setMyCommands called %d times after the retry was stopped", n)
	}
	if strings.Contains(logs.String(), "registered after retrying") {
		t.Errorf("a stopped retry reported success:\n%s", logs.String())
	}
}
