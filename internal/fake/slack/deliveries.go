package slackfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sign is Slack's v0 request signature of body at unix time ts: "v0=" and the hex
// HMAC-SHA256 of "v0:<ts>:<body>" under secret.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + strconv.FormatInt(ts, 10) + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// Delivery says how Deliver signs and marks a request.
type Delivery struct {
	// BadSignature signs with a wrong secret; Stale dates the request 6 minutes back (signed
	// correctly for that time); Unsigned sends no signature headers at all.
	BadSignature, Stale, Unsigned bool
	// RetryNum and RetryReason set X-Slack-Retry-Num / X-Slack-Retry-Reason (a redelivery).
	RetryNum    int
	RetryReason string
}

// Response is what a signed delivery got back.
type Response struct {
	Status int
	Body   []byte
	Header http.Header
	// Took is how long the answer took.
	Took time.Duration
}

// deliveries are the signed HTTP requests Slack makes to an app's Request URLs: Events API
// events, interactions and slash commands, signed with the signing secret (or, on purpose,
// not as they should be).
type deliveries struct {
	secret string
	ix     *interactivity
}

// Deliver POSTs body to target as Slack would: Content-Type ct, X-Slack-Request-Timestamp and
// X-Slack-Signature per d.
func (dl *deliveries) Deliver(target, ct string, body []byte, d Delivery) (Response, error) {
	ts := time.Now().Unix()
	if d.Stale {
		ts -= 6 * 60
	}
	secret := dl.secret
	if d.BadSignature {
		secret += "-wrong"
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if !d.Unsigned {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("X-Slack-Signature", Sign(secret, ts, body))
	}
	if d.RetryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(d.RetryNum))
		reason := d.RetryReason
		if reason == "" {
			reason = "http_timeout"
		}
		req.Header.Set("X-Slack-Retry-Reason", reason)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return Response{Status: resp.StatusCode, Body: b, Header: resp.Header, Took: time.Since(start)}, err
}

// DeliverEvent POSTs an Events API payload (an event_callback from Callback, or any other
// JSON) as JSON.
func (dl *deliveries) DeliverEvent(target string, payload any, d Delivery) (Response, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Response{}, err
	}
	return dl.Deliver(target, "application/json", b, d)
}

// DeliverInteraction POSTs an interaction payload as the payload= form field.
func (dl *deliveries) DeliverInteraction(target string, payload any, d Delivery) (Response, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Response{}, err
	}
	body := url.Values{"payload": {string(b)}}.Encode()
	return dl.Deliver(target, "application/x-www-form-urlencoded", []byte(body), d)
}

// DeliverSlash POSTs a slash command as a form.
func (dl *deliveries) DeliverSlash(target string, c Slash, d Delivery) (Response, error) {
	return dl.Deliver(target, "application/x-www-form-urlencoded", []byte(dl.ix.SlashValues(c).Encode()), d)
}

// URLVerification is the payload Slack sends to check an Events API request URL.
func URLVerification(challenge string) map[string]any {
	return map[string]any{"token": "fake-verification-token", "challenge": challenge, "type": "url_verification"}
}
