package discordfake

import (
	"net/http"
	"strings"
	"sync"
)

// discovery answers what a client asks before it connects: where the gateway is (GET /gateway,
// and GET /gateway/bot with the shards and session starts tests set) and who the bot is
// (users/@me, oauth2/applications/@me).
type discovery struct {
	wsURL func(path string) string

	mu         sync.Mutex
	recShards  int
	maxConc    int
	startsLeft *int
}

func (d *discovery) getGateway(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, map[string]any{"url": d.wsURL(strings.TrimSuffix(routeGatewaySocket, "/"))}
}

func (d *discovery) getGatewayBot(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	d.mu.Lock()
	shards, conc := max(d.recShards, 1), max(d.maxConc, 1)
	remaining := 999
	if d.startsLeft != nil {
		remaining = *d.startsLeft
	}
	d.mu.Unlock()
	return http.StatusOK, map[string]any{
		"url":    d.wsURL(strings.TrimSuffix(routeGatewaySocket, "/")),
		"shards": shards,
		"session_start_limit": map[string]any{
			"total": 1000, "remaining": remaining, "reset_after": 86400000, "max_concurrency": conc,
		},
	}
}

// SetSessionStartsLeft sets session_start_limit.remaining in GET /gateway/bot (default 999).
func (d *discovery) SetSessionStartsLeft(n int) {
	d.mu.Lock()
	d.startsLeft = &n
	d.mu.Unlock()
}

// RecommendShards sets what GET /gateway/bot recommends: the number of shards and how many may
// identify at once (max_concurrency). Default 1 and 1.
func (d *discovery) RecommendShards(shards, maxConcurrency int) {
	d.mu.Lock()
	d.recShards, d.maxConc = shards, maxConcurrency
	d.mu.Unlock()
}

func botUser() map[string]any {
	return map[string]any{"id": BotID, "username": BotUsername, "discriminator": "0", "global_name": nil, "bot": true}
}

func (d *discovery) getMe(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, botUser()
}

func (d *discovery) getApplication(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, map[string]any{"id": ApplicationID, "name": "Switchboard Test", "bot_public": true, "bot": botUser()}
}
