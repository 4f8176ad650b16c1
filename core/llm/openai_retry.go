package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// exchangeKey carries an *exchange in a request's context, so the HTTP layer can send the
// pre-encoded body and report what the go-openai client does not expose: the status and the
// Retry-After header.
type exchangeKey struct{}

// exchange is one HTTP attempt: the body to send, and what capturingDoer saw of the answer.
// It is written and read on the goroutine that runs the attempt.
type exchange struct {
	body       []byte // the encoded request (see wireBody); never modified
	status     int
	retryAfter string
}

// capturingDoer is the HTTP client handed to go-openai. It sends the attempt's pre-encoded
// body in place of go-openai's encoding of the stub request, and records each answer's status
// and Retry-After header in the request's exchange.
type capturingDoer struct{ c *http.Client }

func (d capturingDoer) Do(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if x != nil && x.body != nil {
		body := x.body
		// io.NopCloser over a *bytes.Reader is a body net/http knows is in memory, so it writes
		// the headers and the body in one write instead of flushing the headers first.
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.c.Do(r)
	if err == nil && x != nil {
		x.status = resp.StatusCode
		x.retryAfter = resp.Header.Get("Retry-After")
	}
	return resp, err
}

// failure is one failed attempt, classified.
type failure struct {
	err        error // what the caller gets if this is the last attempt; never holds the key
	status     int
	retryAfter time.Duration
	retryable  bool
	streamed   bool
}

// classify turns an attempt's error into a failure. The key never reaches the error: auth
// failures carry no server text (servers quote the key back), other server text is redacted.
func (p *OpenAI) classify(err error, x *exchange, streamed bool) *failure {
	f := &failure{status: x.status, streamed: streamed}
	if ra, ok := parseRetryAfter(x.retryAfter, time.Now()); ok {
		f.retryAfter = ra
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var serverMsg string
	switch {
	case errors.As(err, &apiErr):
		serverMsg = apiErr.Message
		if apiErr.HTTPStatusCode != 0 {
			f.status = apiErr.HTTPStatusCode
		}
	case errors.As(err, &reqErr):
		serverMsg = string(reqErr.Body)
		if reqErr.HTTPStatusCode != 0 {
			f.status = reqErr.HTTPStatusCode
		}
	}
	serverMsg = p.redact(shorten(strings.TrimSpace(serverMsg), 300))

	if f.status < 400 {
		// No HTTP failure status: a transport failure, a cut stream, or an error event inside
		// a 200 stream.
		kind := ErrUnavailable
		if streamed {
			kind = ErrStreamCut
		}
		if apiErr != nil {
			f.err = fmt.Errorf("llm: openai: %s reported an error in the stream: %w: %s", p.host, kind, serverMsg)
			return f
		}
		f.retryable = isTransient(err)
		if !f.retryable {
			f.err = fmt.Errorf("llm: openai: call to %s: %w", p.host, err)
			return f
		}
		f.err = fmt.Errorf("llm: openai: call to %s: %w: %w", p.host, kind, err)
		return f
	}
	switch f.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		f.err = fmt.Errorf("%w (%s answered HTTP %d; check the API key)", ErrAuth, p.host, f.status)
	case http.StatusNotFound:
		f.err = fmt.Errorf("%w (%s answered HTTP 404 for model %q: %s)", ErrNotFound, p.host, p.opts.Model, serverMsg)
	default:
		f.retryable = f.status == http.StatusTooManyRequests || f.status >= 500
		f.err = &StatusError{Provider: p.host, StatusCode: f.status, RetryAfter: f.retryAfter, Message: serverMsg}
	}
	return f
}

// isTransient reports whether err is a connection-level failure worth another attempt.
func isTransient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamEnded)
}

// redact removes the API key from s.
func (p *OpenAI) redact(s string) string {
	if k := p.opts.APIKey; k != "" {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // keep UTF-8 sequences whole
	}
	return s[:n] + "…"
}

// backoff is the wait before retry number attempt+1: base doubled per attempt, capped at limit,
// with "equal jitter" (half fixed, half random) so clients that failed together spread out.
func backoff(attempt int, base, limit time.Duration) time.Duration {
	d := base
	for i := 0; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + rand.N(half+1)
}

// maxRetryAfter bounds a parsed Retry-After so arithmetic on it cannot overflow.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds (a decimal fraction is accepted, as
// some servers send one) or an HTTP date, relative to now. A date in the past means 0. It
// reports false for an empty or malformed value.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789.") == "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		if secs >= maxRetryAfter.Seconds() {
			return maxRetryAfter, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > maxRetryAfter:
		return maxRetryAfter, true
	}
	return d, true
}
