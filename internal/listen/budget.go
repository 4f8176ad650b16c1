package listen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// budget is a kind of route's share of the listener: at most cap(slots) requests in its
// handlers at once, each with a context ending after timeout, answered by the listener if the
// handler has not answered AnswerGrace later; bodyTimeout, when set, is the body's deadline.
type budget struct {
	slots       chan struct{}
	timeout     time.Duration
	bodyTimeout time.Duration
}

// take takes a slot of b, or refuses the request (503, Retry-After) and says so.
func (l *Listener) take(w http.ResponseWriter, r *http.Request, path string, b *budget) bool {
	select {
	case b.slots <- struct{}{}:
		return true
	default:
		l.refusals.refuse(refusedOverCapacity, path, r.RemoteAddr)
		refuseBusy(w, "busy")
		return false
	}
}

// refuseBusy answers 503 with Retry-After and closes the connection, so whatever is left of
// the request's body is not read. The length is stated, so that the answer is whole once
// flushed even while the handler it answers for goes on.
func refuseBusy(w http.ResponseWriter, text string) {
	body := text + "\n"
	h := w.Header()
	h.Set("Retry-After", "1")
	h.Set("Connection", "close")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, body)
}

func (l *Listener) guard(path string, b *budget, h http.Handler) http.Handler {
	path = routeLabel(path)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.take(w, r, path, b) {
			return
		}
		defer func() { <-b.slots }() // when the handler returns, answered in time or not
		if b.bodyTimeout > 0 {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(b.bodyTimeout))
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		ctx, cancel := context.WithTimeout(r.Context(), b.timeout)
		defer cancel()
		// The handler writes into a, which is sent once it returns, unless the listener has
		// answered for it by then: only one of the two ever writes to w. The handler runs on
		// this goroutine, so the server's Shutdown waits for it as for any handler.
		a := &answer{header: http.Header{}}
		answered := make(chan struct{})
		t := time.AfterFunc(b.timeout+l.opts.AnswerGrace, func() {
			if !a.abandon() {
				return
			}
			defer close(answered)
			l.refusals.refuse(refusedHandoverTimeout, path, r.RemoteAddr)
			refuseBusy(w, "try again")
			_ = http.NewResponseController(w).Flush()
		})
		defer t.Stop()
		defer func() {
			// On a panic too: w is not given back while the listener's answer is being written.
			if !a.finish() {
				<-answered
			}
		}()
		h.ServeHTTP(a, r.WithContext(ctx))
		if !a.finish() {
			return // answered by the listener
		}
		switch code := a.sendTo(w); code {
		case http.StatusUnauthorized:
			l.refusals.refuse(refusedBadSignature, path, r.RemoteAddr)
		case http.StatusRequestEntityTooLarge:
			l.refusals.refuse(refusedTooLarge, path, r.RemoteAddr)
		case http.StatusRequestTimeout:
			l.refusals.refuse(refusedTooSlow, path, r.RemoteAddr)
		}
	})
}

// deadlineBody lifts the body's read deadline once the body is read: the server reads on in
// the background from then on, to notice a client that goes away, and would end the request's
// context when that read meets the deadline, long before WebhookTimeout.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// answer is a handler's response, kept until the handler returns so that the listener can send
// it, or drop it for its own 503 when the handler takes too long.
type answer struct {
	header http.Header
	mu     sync.Mutex
	code   int
	body   bytes.Buffer
	// finished: the handler returned first and the answer is sent; abandoned: the listener
	// answered first and the handler's writes are dropped.
	finished, abandoned bool
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.code == 0 {
		a.code = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.abandoned {
		return 0, http.ErrHandlerTimeout
	}
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(p)
}

// finish marks the handler returned; false when the listener answered already.
func (a *answer) finish() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finished = !a.abandoned
	return a.finished
}

// abandon marks the listener answering; false when the handler returned already.
func (a *answer) abandon() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.abandoned = !a.finished
	return a.abandoned
}

// sendTo writes the answer to w and returns its status.
func (a *answer) sendTo(w http.ResponseWriter) int {
	maps.Copy(w.Header(), a.header)
	code := a.code
	if code == 0 {
		code = http.StatusOK
	}
	w.WriteHeader(code)
	_, _ = w.Write(a.body.Bytes())
	return code
}
