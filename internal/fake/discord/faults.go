package discordfake

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault is an error answer to inject. A 429 carries retry_after (RetryAfter, default 50 ms) in
// the body and the Retry-After and X-RateLimit-* headers; Global marks it a global rate limit
// (X-RateLimit-Global, X-RateLimit-Scope: global). Code and Message default to Discord's usual
// ones for the status.
type Fault struct {
	Status     int
	RetryAfter time.Duration
	Global     bool
	Code       int
	Message    string
}

// faults are the error answers tests inject, taken by the REST calls they match in the order
// they were added.
type faults struct {
	mu   sync.Mutex
	list []*fault
}

type fault struct {
	method, route, channel string // "" matches any
	left                   int
	f                      Fault
}

// FailNext makes the next n calls of method on route (see the Route constants; "" for any
// method or route) answer with f.
func (fs *faults) FailNext(method, route string, n int, f Fault) {
	fs.mu.Lock()
	fs.list = append(fs.list, &fault{method: method, route: route, left: n, f: f})
	fs.mu.Unlock()
}

// FailChannel is FailNext limited to calls on one channel.
func (fs *faults) FailChannel(channelID, method, route string, n int, f Fault) {
	fs.mu.Lock()
	fs.list = append(fs.list, &fault{method: method, route: route, channel: channelID, left: n, f: f})
	fs.mu.Unlock()
}

// RateLimitStorm makes the next n calls of method on route answer 429 with retryAfter.
func (fs *faults) RateLimitStorm(method, route string, n int, retryAfter time.Duration) {
	fs.FailNext(method, route, n, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter})
}

// GlobalRateLimit makes the next n calls of any route answer a global 429.
func (fs *faults) GlobalRateLimit(n int, retryAfter time.Duration) {
	fs.FailNext("", "", n, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, Global: true})
}

// take consumes one fault matching a call of method on route about channel, if any.
func (fs *faults) take(method, route, channel string) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if (f.method == "" || f.method == method) && (f.route == "" || f.route == route) &&
			(f.channel == "" || f.channel == channel) {
			f.left--
			if f.left <= 0 {
				fs.list = append(fs.list[:i], fs.list[i+1:]...)
			}
			out := f.f
			return &out
		}
	}
	return nil
}

// answer writes the fault's headers and returns its status and body.
func (f *Fault) answer(w http.ResponseWriter) (int, any) {
	if f.Status != http.StatusTooManyRequests {
		msg, code := f.Message, f.Code
		if msg == "" {
			msg = http.StatusText(f.Status)
		}
		return f.Status, apiError{Message: msg, Code: code}
	}
	ra := f.RetryAfter
	if ra <= 0 {
		ra = time.Duration(defaultRetryAfter * float64(time.Second))
	}
	secs := ra.Seconds()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(secs))))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().Add(ra).UnixMilli())/1000, 'f', 3, 64))
	scope := "user"
	if f.Global {
		h.Set("X-RateLimit-Global", "true")
		scope = "global"
	}
	h.Set("X-RateLimit-Scope", scope)
	msg := f.Message
	if msg == "" {
		msg = "You are being rate limited."
	}
	return http.StatusTooManyRequests, map[string]any{"message": msg, "retry_after": secs, "global": f.Global, "code": f.Code}
}
