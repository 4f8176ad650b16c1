package slack

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Default paths of HTTP mode's handlers.
const (
	DefaultEventsPath       = "/slack/events"
	DefaultInteractionsPath = "/slack/interactions"
	DefaultCommandsPath     = "/slack/commands"
)

// httpIntake is HTTP mode's dispatcher: the handlers of the Events API, interactivity and slash
// command request URLs, each request's signature checked and its payload handed to the dispatcher.
type httpIntake struct {
	cfg        *Config
	log        *slog.Logger
	life       *kit.Lifecycle
	workers    *kit.Workers // counts the deliveries being handed over, which StopIntake waits for
	dispatcher *dispatcher
}

// EventsHandler serves the Events API request URL; InteractionsHandler the interactivity
// request URL; CommandsHandler the slash command request URL. Mount them on the shared
// listener (HTTP mode). Each answers 405 to anything but POST, 401 to a request whose v0
// signature is missing, wrong, or older than 5 minutes (checked in constant time by
// slack.SecretsVerifier; logged at Debug only, the listener counts the 401s), 413 to a body
// over 1 MiB (announced by Content-Length: refused unread), 408 to a body that does not arrive
// before the connection's read deadline (set by the listener), 503 before Start or after Stop,
// 400 to a body it cannot read otherwise (a malformed payload is counted and answered 200, so
// Slack does not resend what can never be read), 500 when the Handler fails (Slack retries;
// the retry, marked X-Slack-Retry-Num, is deduplicated by the router on the event's channel
// and ts), and 200 once the payload is handed over, ignored, or — url_verification — with the
// challenge.
func (hi *httpIntake) EventsHandler() http.Handler { return hi.handlerFor(typeEvents) }

// InteractionsHandler serves block_actions and view_submission payloads; see EventsHandler.
func (hi *httpIntake) InteractionsHandler() http.Handler { return hi.handlerFor(typeInteractive) }

// CommandsHandler serves the slash command; see EventsHandler.
func (hi *httpIntake) CommandsHandler() http.Handler { return hi.handlerFor(typeSlash) }

func (hi *httpIntake) handlerFor(typ string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hi.serve(w, r, typ) })
}

func (hi *httpIntake) serve(w http.ResponseWriter, r *http.Request, typ string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// The whole body is read before anyone is authenticated (the signature covers it): at most
	// maxPayloadBytes, none when Content-Length announces more, within the read deadline the
	// listener set.
	body, err := kit.ReadBody(w, r, maxPayloadBytes)
	if err != nil {
		hi.log.Debug("slack: refused a request body", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		kit.RefuseBody(w, err)
		return
	}
	if typ == typeSlash && sslCheck(body) {
		// Slack's check of the certificate at a command URL: nothing to verify or hand over.
		w.WriteHeader(http.StatusOK)
		return
	}
	if !hi.verify(r.Header, body) {
		// Debug, not Warn: anyone can send these, and a line each would let them fill the log.
		// The listener counts the 401s and logs them at a bounded rate.
		hi.log.Debug("slack: refused a request with a bad or stale signature", "path", r.URL.Path, "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if !hi.life.IsReceiving() {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	payload, err := httpPayload(typ, body)
	if err != nil {
		hi.dispatcher.malformed(typ, err)
		w.WriteHeader(http.StatusOK)
		return
	}
	d, err := hi.dispatcher.decodeDelivery(typ, payload)
	switch {
	case err != nil:
		hi.dispatcher.malformed(typ, err)
		w.WriteHeader(http.StatusOK)
		return
	case d.challenge != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": d.challenge})
		return
	case d.skip && d.refused != nil:
		hi.cfg.Metrics.Ack("refused")
		hi.log.Warn("slack: a delivery could not be handled; Slack will retry", "type", typ,
			"retry_num", r.Header.Get("X-Slack-Retry-Num"), "err", d.refused)
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	case d.skip:
		w.WriteHeader(http.StatusOK)
		return
	}
	hi.handOver(w, r, typ, d)
}

// handOver hands a decoded delivery to the Handler in its conversation's lane (one at a
// time per conversation, as over Socket Mode) and answers: 200 once handed over, or for a click
// or a command at the ack deadline whatever its handling; 500 when the Handler failed (Slack
// retries).
func (hi *httpIntake) handOver(w http.ResponseWriter, r *http.Request, typ string, d delivery) {
	done := make(chan error, 1)
	ctx := r.Context()
	var deadline <-chan time.Time
	if typ != typeEvents {
		// As over Socket Mode, a click or a command is answered within Slack's 3 s whatever its
		// handling, which then goes on without the request.
		ctx = context.WithoutCancel(ctx)
		t := time.NewTimer(hi.dispatcher.ackDeadline)
		defer t.Stop()
		deadline = t.C
	}
	hand := hi.dispatcher.lanes.Do // an event is handed over on this goroutine when its lane is free
	if deadline != nil {
		hand = hi.dispatcher.lanes.Run // this goroutine must be free to answer by the deadline
	}
	// Held under the lock StopIntake takes first: no delivery joins its wait once it began.
	release, ok := hi.workers.Hold()
	if !ok {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	hand(d.in.Conv.String(), func() {
		defer release()
		done <- hi.dispatcher.deliver(ctx, d)
	})
	var err error
	select {
	case err = <-done:
	case <-deadline:
		hi.cfg.Metrics.Ack("acked")
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		hi.cfg.Metrics.Ack("refused")
		hi.log.Warn("slack: the handler refused a delivery; Slack will retry", "type", typ,
			"retry_num", r.Header.Get("X-Slack-Retry-Num"), "err", err)
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	hi.cfg.Metrics.Ack("acked")
	w.WriteHeader(http.StatusOK)
}

// sslCheck reports whether body is a slash command URL's ssl_check=1 probe.
func sslCheck(body []byte) bool {
	v, err := url.ParseQuery(string(body))
	return err == nil && v.Get("ssl_check") == "1" && v.Get("command") == ""
}

// verify checks the v0 signature and the timestamp's age (5 minutes).
func (hi *httpIntake) verify(h http.Header, body []byte) bool {
	v, err := slackgo.NewSecretsVerifier(h, hi.cfg.SigningSecret)
	if err != nil {
		return false
	}
	if _, err := v.Write(body); err != nil {
		return false
	}
	return v.Ensure() == nil
}

// httpPayload extracts the payload from an HTTP body: the JSON itself (events), the payload=
// form field (interactions), or the form as a JSON object of strings (slash commands, the shape
// Socket Mode uses).
func httpPayload(typ string, body []byte) ([]byte, error) {
	switch typ {
	case typeEvents:
		return body, nil
	case typeInteractive:
		v, err := url.ParseQuery(string(body))
		if err != nil || v.Get("payload") == "" {
			return nil, errors.Join(errMalformed, errors.New("slack: interaction without a payload field"), err)
		}
		return []byte(v.Get("payload")), nil
	default:
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, errors.Join(errMalformed, err)
		}
		m := make(map[string]string, len(v))
		for k, vs := range v {
			m[k] = vs[0]
		}
		return json.Marshal(m)
	}
}
