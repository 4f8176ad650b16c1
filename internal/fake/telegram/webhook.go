package telegramfake

import "sync"

// WebhookInfo is the webhook state the fake keeps (getWebhookInfo, plus the secret).
type WebhookInfo struct {
	URL                string `json:"url"`
	HasCustomCert      bool   `json:"has_custom_certificate"`
	PendingUpdateCount int    `json:"pending_update_count"`
	// SecretToken is what setWebhook received; getWebhookInfo does not reveal it.
	SecretToken string `json:"-"`
}

// webhook is the bot's webhook as setWebhook, deleteWebhook and getWebhookInfo keep it; while
// one is set, getUpdates is refused.
type webhook struct {
	mu      *sync.Mutex
	updates *updates
	// info is guarded by mu.
	info WebhookInfo
}

// activeLocked reports whether a webhook is set.
func (wh *webhook) activeLocked() bool { return wh.info.URL != "" }

func (wh *webhook) setWebhook(p map[string]string) (any, *apiError) {
	if p["url"] == "" {
		wh.info = WebhookInfo{}
		return true, nil
	}
	wh.info = WebhookInfo{URL: p["url"], SecretToken: p["secret_token"]}
	return true, nil
}

func (wh *webhook) deleteWebhook(p map[string]string) (any, *apiError) {
	wh.info = WebhookInfo{}
	if p["drop_pending_updates"] == "true" {
		wh.updates.queue = nil
	}
	return true, nil
}

func (wh *webhook) getWebhookInfo(map[string]string) (any, *apiError) {
	w := wh.info
	w.PendingUpdateCount = len(wh.updates.queue)
	return w, nil
}

// Webhook returns the webhook as last set (URL empty when none), secret included.
func (wh *webhook) Webhook() WebhookInfo {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	return wh.info
}
