package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// commandCalls counts the requests of method on the global commands route, whatever their
// answer.
func commandCalls(fk *discordfake.Server, method string) int {
	n := 0
	for _, c := range fk.Calls() {
		if c.Method == method && c.Route == discordfake.RouteCommands {
			n++
		}
	}
	return n
}

func assertCommandsRegistered(t *testing.T, fk *discordfake.Server) {
	t.Helper()
	var names []string
	for _, c := range fk.Commands("") {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "bot,botadmin" {
		t.Errorf("registered commands %v, want bot,botadmin", names)
	}
}

// TestRegisterCommandsWaitsOutA429 proves a registration met with a few 429s on the GET and the
// PUT of the commands route waits them out: the commands are registered by the one call, with
// one bulk overwrite and one PUT per 429 plus the one that worked.
func TestRegisterCommandsWaitsOutA429(t *testing.T) {
	fk := discordfake.New(t)
	h := newHarness(t, fk, nil)
	fk.RateLimitStorm(http.MethodGet, discordfake.RouteCommands, 2, 20*time.Millisecond)
	fk.RateLimitStorm(http.MethodPut, discordfake.RouteCommands, 3, 20*time.Millisecond)
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	assertCommandsRegistered(t, fk)
	if n := fk.CommandOverwrites(); n != 1 {
		t.Errorf("%d bulk overwrites, want 1", n)
	}
	if n := commandCalls(fk, http.MethodPut); n != 4 {
		t.Errorf("%d PUTs of the commands, want 4 (three 429s, then the overwrite)", n)
	}
	if n := commandCalls(fk, http.MethodGet); n != 3 {
		t.Errorf("%d GETs of the commands, want 3 (two 429s, then the list)", n)
	}
	if strings.Contains(h.logs.String(), "registering commands failed") {
		t.Errorf("a registration that waited out its 429s logged a failure:\n%s", h.logs.String())
	}
}

// TestRegisterCommandsRetriedLater proves a registration refused for longer than one call waits
// (429s past the retry bound, a Discord outage) is retried in the background and succeeds with
// one bulk overwrite.
func TestRegisterCommandsRetriedLater(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(fk *discordfake.Server)
		puts  int             // PUTs in all
		waits []time.Duration // the background retry's waits
	}{
		{
			// Each call takes the first PUT and five retries: two calls fail, the third works.
			name: "429s past the retry bound",
			fault: func(fk *discordfake.Server) {
				fk.RateLimitStorm(http.MethodPut, discordfake.RouteCommands, 12, 10*time.Millisecond)
			},
			puts: 13, waits: []time.Duration{regRetryMin, 2 * regRetryMin},
		},
		{
			// The call retries a 503 twice, then gives up.
			name: "an outage",
			fault: func(fk *discordfake.Server) {
				fk.FailNext(http.MethodGet, discordfake.RouteCommands, 3, discordfake.Fault{Status: http.StatusServiceUnavailable})
			},
			puts: 1, waits: []time.Duration{regRetryMin},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fk := discordfake.New(t)
			w := &chantest.Waits{}
			h := newHarnessPrepared(t, fk, nil, func(c *Channel) { c.reg.Wait = w.Wait })
			tc.fault(fk)
			if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
				t.Fatalf("RegisterCommands: %v, want nil: the registration is retried", err)
			}
			poll.Until(t, "the commands registered by the retry", func() bool {
				return strings.Contains(h.logs.String(), "commands registered after retrying")
			})
			assertCommandsRegistered(t, fk)
			if n := fk.CommandOverwrites(); n != 1 {
				t.Errorf("%d bulk overwrites, want 1", n)
			}
			if n := commandCalls(fk, http.MethodPut); n != tc.puts {
				t.Errorf("%d PUTs of the commands, want %d", n, tc.puts)
			}
			if got := w.All(); !slices.Equal(got, tc.waits) {
				t.Errorf("background waits %v, want %v", got, tc.waits)
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "registering commands failed; retrying in the background") {
				t.Errorf("the failure was not logged:\n%s", logs)
			}
			if strings.Contains(logs, fk.Token()) {
				t.Error("the token is in the logs")
			}
		})
	}
}

// TestRegisterCommandsBackoffIsBounded proves the background retry's waits double up to
// regRetryMax and stay there.
func TestRegisterCommandsBackoffIsBounded(t *testing.T) {
	fk := discordfake.New(t)
	w := &chantest.Waits{}
	// A MaxRetryWait below minRateLimitWait: every call gives up at its first 429.
	h := newHarnessPrepared(t, fk, func(c *Config) { c.MaxRetryWait = 10 * time.Millisecond },
		func(c *Channel) { c.reg.Wait = w.Wait })
	const attempts = 12
	fk.RateLimitStorm(http.MethodPut, discordfake.RouteCommands, attempts, 10*time.Millisecond)
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the commands registered by the retry", func() bool { return fk.CommandOverwrites() == 1 })
	got := w.All()
	if len(got) != attempts {
		t.Fatalf("%d waits, want %d: %v", len(got), attempts, got)
	}
	want := regRetryMin
	for i, d := range got {
		if d != want {
			t.Errorf("wait %d = %v, want %v", i, d, want)
		}
		want = min(2*want, regRetryMax)
	}
	if got[len(got)-1] != regRetryMax {
		t.Errorf("last wait %v, want the bound %v", got[len(got)-1], regRetryMax)
	}
}

// TestRegisterCommandsRetryEndsAtStop proves Stop ends a registration being retried: Stop returns
// at once though the retry waits minutes, and no request follows (goleak checks the goroutine).
func TestRegisterCommandsRetryEndsAtStop(t *testing.T) {
	fk := discordfake.New(t)
	h := newHarness(t, fk, nil)
	fk.RateLimitStorm(http.MethodPut, discordfake.RouteCommands, 1, time.Hour)
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.ch.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	puts := commandCalls(fk, http.MethodPut)
	if puts != 1 || fk.CommandOverwrites() != 0 {
		t.Errorf("%d PUTs, %d overwrites; want the one refused PUT", puts, fk.CommandOverwrites())
	}
}

// TestRegistrationWaitHonoursRetryAfter proves the background retry waits the backoff, or a
// 429's retry_after when that is longer.
func TestRegistrationWaitHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backoff time.Duration
		err     error
		want    time.Duration
	}{
		{"an outage", regRetryMin, errors.New("discord: get commands: 503"), regRetryMin},
		{"a short retry_after", 8 * time.Second, &channels.RateLimitError{RetryAfter: time.Second}, 8 * time.Second},
		{"a long retry_after", regRetryMin, &channels.RateLimitError{RetryAfter: 7 * time.Minute}, 7 * time.Minute},
		{"a wrapped one", regRetryMax, fmt.Errorf("x: %w", &channels.RateLimitError{RetryAfter: time.Hour}), time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kit.RetryWait(tc.backoff, tc.err); got != tc.want {
				t.Errorf("kit.RetryWait(%v, %v) = %v, want %v", tc.backoff, tc.err, got, tc.want)
			}
		})
	}
}

// TestRegisterCommandsRefusalNotRetried proves a registration Discord refuses as such (a 4xx
// other than 429) is returned, not retried.
func TestRegisterCommandsRefusalNotRetried(t *testing.T) {
	fk := discordfake.New(t)
	w := &chantest.Waits{}
	h := newHarnessPrepared(t, fk, nil, func(c *Channel) { c.reg.Wait = w.Wait })
	fk.FailNext(http.MethodPut, discordfake.RouteCommands, 1, discordfake.Fault{Status: http.StatusBadRequest, Code: 50035, Message: "Invalid Form Body"})
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err == nil {
		t.Fatal("nil error for a refused registration")
	}
	if n := len(w.All()); n != 0 || strings.Contains(h.logs.String(), "retrying in the background") {
		t.Errorf("a refused registration was retried (%d waits)", n)
	}
}

// TestRegisterCommandsReplacesPendingRetry proves a later registration ends the retry of an
// earlier one: only the later commands are registered.
func TestRegisterCommandsReplacesPendingRetry(t *testing.T) {
	fk := discordfake.New(t)
	// The retry of the first registration waits until it is ended.
	h := newHarnessPrepared(t, fk, func(c *Config) { c.MaxRetryWait = 10 * time.Millisecond },
		func(c *Channel) {
			c.reg.Wait = func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }
		})
	fk.RateLimitStorm(http.MethodPut, discordfake.RouteCommands, 1, 10*time.Millisecond)
	if err := h.ch.RegisterCommands(context.Background(), channels.Commands()); err != nil {
		t.Fatal(err)
	}
	specs := []channels.CommandSpec{{Name: "/help", Description: "help"}}
	if err := h.ch.RegisterCommands(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.ch.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if cmds := fk.Commands(""); len(cmds) != 1 || cmds[0].Name != "bot" || fk.CommandOverwrites() != 1 {
		t.Errorf("commands %+v after %d overwrites, want /bot alone, once", cmds, fk.CommandOverwrites())
	}
}
