package telegram

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// waiting is how many deliveries wait for the conversation's turn.
func (g *convGate) waiting(k convOrder) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.turns[k]; t != nil {
		return len(t.waiters)
	}
	return 0
}

func TestConvGateHandsTheTurnInUpdateOrder(t *testing.T) {
	g := newConvGate()
	k := convOrder{chat: 42}
	now := time.Now
	if err := g.enter(context.Background(), k, 1, now); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for i, id := range []int64{5, 3, 4} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.enter(context.Background(), k, id, now); err != nil {
				t.Errorf("enter %d: %v", id, err)
				return
			}
			mu.Lock()
			got = append(got, id)
			mu.Unlock()
			g.leave(k, id, true, now)
		}()
		eventually(t, "waiter "+strconv.Itoa(i+1)+" queued", func() bool { return g.waiting(k) == i+1 })
	}
	// Another conversation is not held up.
	if err := g.enter(context.Background(), convOrder{chat: 7}, 2, now); err != nil {
		t.Fatal(err)
	}
	g.leave(convOrder{chat: 7}, 2, true, now)
	g.leave(k, 1, true, now)
	wg.Wait()
	if !slices.Equal(got, []int64{3, 4, 5}) {
		t.Fatalf("turns went to %v, want 3 4 5", got)
	}
	if len(g.turns) != 0 {
		t.Fatalf("%d conversations remembered after all turns ended", len(g.turns))
	}
}

func TestConvGateHoldsBackLaterUpdatesAfterAFailure(t *testing.T) {
	g := newConvGate()
	k := convOrder{chat: 42}
	clock := time.Unix(1000, 0)
	now := func() time.Time { return clock }
	ctx := context.Background()
	if err := g.enter(ctx, k, 10, now); err != nil {
		t.Fatal(err)
	}
	g.leave(k, 10, false, now)
	steps := []struct {
		name    string
		id      int64
		advance time.Duration
		handed  bool
		want    error
	}{
		{"a later update is held back", 11, 0, true, errHeldBack},
		{"an earlier update goes through", 9, 0, true, nil},
		{"the failed update's redelivery goes through", 10, 0, true, nil},
		{"then later updates go through", 11, 0, true, nil},
		{"a new failure holds back again", 12, 0, false, nil},
		{"held back while recent", 13, holdBack - time.Second, true, errHeldBack},
		{"released once the hold-back expires", 13, time.Second, true, nil},
	}
	for _, s := range steps { // each step builds on the ones before
		t.Run(s.name, func(t *testing.T) {
			clock = clock.Add(s.advance)
			err := g.enter(ctx, k, s.id, now)
			if err == nil {
				g.leave(k, s.id, s.handed, now)
			}
			if !errors.Is(err, s.want) {
				t.Fatalf("enter %d = %v, want %v", s.id, err, s.want)
			}
		})
	}
}

func TestConvGateWaiterCancelledLeavesTheTurnUsable(t *testing.T) {
	g := newConvGate()
	k := convOrder{chat: 42}
	if err := g.enter(context.Background(), k, 1, time.Now); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.enter(ctx, k, 2, time.Now) }()
	eventually(t, "waiter queued", func() bool { return g.waiting(k) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled enter = %v", err)
	}
	g.leave(k, 1, true, time.Now)
	if err := g.enter(context.Background(), k, 3, time.Now); err != nil {
		t.Fatalf("enter after a cancelled waiter: %v", err)
	}
	g.leave(k, 3, true, time.Now)
}

func webhookBody(id int64, chat int64, text string) string {
	return `{"update_id":` + strconv.FormatInt(id, 10) + `,"message":{"message_id":` + strconv.FormatInt(id, 10) +
		`,"from":{"id":` + strconv.FormatInt(chat, 10) + `,"is_bot":false,"first_name":"U"},"chat":{"id":` +
		strconv.FormatInt(chat, 10) + `,"type":"private"},"date":1,"text":"` + text + `"}}`
}

func TestWebhookDeliveriesConcurrentAcrossChatsOrderedAndHeldBackWithinChat(t *testing.T) {
	const secret = "webhook-secret"
	bDone := make(chan struct{})
	var mu sync.Mutex
	refused := false
	h := newOrderHandler(t, func(in channels.Inbound) error {
		switch in.Text {
		case "a1":
			waitClosed(t, bDone, "chat b while chat a's delivery is held")
		case "b1":
			close(bDone)
		case "a2":
			mu.Lock()
			defer mu.Unlock()
			if !refused {
				refused = true
				return errors.New("queue unavailable")
			}
		}
		return nil
	})
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) {
		c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", secret
	})
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background())
	srv := httptest.NewServer(ch.WebhookHandler())
	defer srv.Close()
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set(SecretHeader, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// a1 is held in the Handler until b1 was handed over: the deliveries run concurrently.
	var wg sync.WaitGroup
	for _, body := range []string{webhookBody(1, 42, "a1"), webhookBody(2, 7, "b1")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := post(body); code != http.StatusOK {
				t.Errorf("status %d", code)
			}
		}()
	}
	wg.Wait()
	// a2 is refused; a3 must then wait for a2's redelivery.
	steps := []struct {
		body string
		want int
	}{
		{webhookBody(3, 42, "a2"), http.StatusInternalServerError},
		{webhookBody(4, 42, "a3"), http.StatusInternalServerError},
		{webhookBody(5, 7, "b2"), http.StatusOK},
		{webhookBody(3, 42, "a2"), http.StatusOK},
		{webhookBody(4, 42, "a3"), http.StatusOK},
	}
	for i, s := range steps {
		if code := post(s.body); code != s.want {
			t.Fatalf("step %d: status %d, want %d", i, code, s.want)
		}
	}
	if got := h.order(privateConv(42)); !slices.Equal(got, []string{"a1", "a2", "a2", "a3"}) {
		t.Fatalf("chat a handed over %q, want a1 a2 (refused) a2 a3", got)
	}
	if got := h.order(privateConv(7)); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("chat b handed over %q", got)
	}
}
