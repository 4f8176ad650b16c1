package telegramfake

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Fault is an error answer to inject. Status 429 with RetryAfter > 0 carries
// parameters.retry_after; an empty Description gets Telegram's usual one for the status.
type Fault struct {
	Status      int
	RetryAfter  int
	Description string
}

// faults are what tests make calls do instead of their usual answer: fail (FailNext, FailChat,
// FailChatAfter, RateLimitStorm), wait (Delay), or find no such method (Unsupported).
type faults struct {
	mu *sync.Mutex
	// Guarded by mu.
	list   []*fault
	delays map[string]time.Duration
	// unknown are the methods answered 404 as a server that predates them does (Unsupported).
	unknown map[string]bool
}

func newFaults(mu *sync.Mutex) *faults {
	return &faults{mu: mu, delays: map[string]time.Duration{}, unknown: map[string]bool{}}
}

type fault struct {
	method string
	chatID int64 // 0: any chat
	skip   int   // matching calls still to let through before the fault begins
	left   int
	f      Fault
}

// FailNext makes the next n calls of method (any chat) answer with f.
func (fs *faults) FailNext(method string, n int, f Fault) { fs.add(method, 0, 0, n, f) }

// FailChat makes the next n calls of method for chatID answer with f.
func (fs *faults) FailChat(chatID int64, method string, n int, f Fault) {
	fs.add(method, chatID, 0, n, f)
}

// FailChatAfter lets the next skip calls of method for chatID through, then makes the n after
// them answer with f: a failure part-way through a message sent in several pieces.
func (fs *faults) FailChatAfter(chatID int64, method string, skip, n int, f Fault) {
	fs.add(method, chatID, skip, n, f)
}

// ClearFaults drops the faults still pending for method: an outage FailNext began with a
// large n ends.
func (fs *faults) ClearFaults(method string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.list = slices.DeleteFunc(fs.list, func(f *fault) bool { return f.method == method })
}

// RateLimitStorm makes the next n calls of method answer 429 "Too Many Requests: retry after
// <retryAfter>" with parameters.retry_after.
func (fs *faults) RateLimitStorm(method string, n, retryAfter int) {
	fs.FailNext(method, n, Fault{Status: 429, RetryAfter: retryAfter})
}

func (fs *faults) add(method string, chatID int64, skip, n int, f Fault) {
	if f.Description == "" {
		switch {
		case f.Status == 429:
			f.Description = "Too Many Requests: retry after " + strconv.Itoa(f.RetryAfter)
		case f.Status >= 500:
			f.Description = "Internal Server Error"
		default:
			f.Description = "Bad Request"
		}
	}
	fs.mu.Lock()
	fs.list = append(fs.list, &fault{method: method, chatID: chatID, skip: skip, left: n, f: f})
	fs.mu.Unlock()
}

// take consumes one matching fault, if any.
func (fs *faults) take(method string, p map[string]string) *apiError {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.list) == 0 {
		return nil
	}
	cid, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	for i, f := range fs.list {
		if f.method != method || f.chatID != 0 && f.chatID != cid {
			continue
		}
		if f.skip > 0 {
			f.skip--
			return nil
		}
		f.left--
		if f.left <= 0 {
			fs.list = append(fs.list[:i], fs.list[i+1:]...)
		}
		return &apiError{code: f.f.Status, desc: f.f.Description, retryAfter: f.f.RetryAfter}
	}
	return nil
}

// Delay makes every later call of method wait d before it is answered (0 removes the delay); a
// call whose client goes away during the wait is dropped. Tests use it to hold a process in its
// start-up (a slow getMe) or a send in flight.
func (fs *faults) Delay(method string, d time.Duration) {
	fs.mu.Lock()
	if d <= 0 {
		delete(fs.delays, method)
	} else {
		fs.delays[method] = d
	}
	fs.mu.Unlock()
}

// wait blocks for method's delay, if any; it reports false when ctx ended first.
func (fs *faults) wait(ctx context.Context, method string) bool {
	fs.mu.Lock()
	d := fs.delays[method]
	fs.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Unsupported makes the fake answer method 404 "Not Found", as a Bot API server that predates
// the method does (sendMessageDraft before Bot API 9.3).
func (fs *faults) Unsupported(method string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.unknown[method] = true
}

// unsupported reports whether method is to be answered as unknown (Unsupported).
func (fs *faults) unsupported(method string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.unknown[method]
}
