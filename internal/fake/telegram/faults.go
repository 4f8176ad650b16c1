package telegramfake

import (
	"context"
	"slices"
	"strconv"
	"time"
)

// Fault is an error answer to inject. Status 429 with RetryAfter > 0 carries
// parameters.retry_after; an empty Description gets Telegram's usual one for the status.
type Fault struct {
	Status      int
	RetryAfter  int
	Description string
}

type fault struct {
	method string
	chatID int64 // 0: any chat
	skip   int   // matching calls still to let through before the fault begins
	left   int
	f      Fault
}

// FailNext makes the next n calls of method (any chat) answer with f.
func (s *Server) FailNext(method string, n int, f Fault) { s.addFault(method, 0, 0, n, f) }

// FailChat makes the next n calls of method for chatID answer with f.
func (s *Server) FailChat(chatID int64, method string, n int, f Fault) {
	s.addFault(method, chatID, 0, n, f)
}

// FailChatAfter lets the next skip calls of method for chatID through, then makes the n after
// them answer with f: a failure part-way through a message sent in several pieces.
func (s *Server) FailChatAfter(chatID int64, method string, skip, n int, f Fault) {
	s.addFault(method, chatID, skip, n, f)
}

// ClearFaults drops the faults still pending for method: an outage FailNext began with a
// large n ends.
func (s *Server) ClearFaults(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = slices.DeleteFunc(s.faults, func(f *fault) bool { return f.method == method })
}

// RateLimitStorm makes the next n calls of method answer 429 "Too Many Requests: retry after
// <retryAfter>" with parameters.retry_after.
func (s *Server) RateLimitStorm(method string, n, retryAfter int) {
	s.FailNext(method, n, Fault{Status: 429, RetryAfter: retryAfter})
}

func (s *Server) addFault(method string, chatID int64, skip, n int, f Fault) {
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
	s.mu.Lock()
	s.faults = append(s.faults, &fault{method: method, chatID: chatID, skip: skip, left: n, f: f})
	s.mu.Unlock()
}

// takeFault consumes one matching fault, if any.
func (s *Server) takeFault(method string, p map[string]string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return nil
	}
	cid, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	for i, f := range s.faults {
		if f.method != method || f.chatID != 0 && f.chatID != cid {
			continue
		}
		if f.skip > 0 {
			f.skip--
			return nil
		}
		f.left--
		if f.left <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return &apiError{code: f.f.Status, desc: f.f.Description, retryAfter: f.f.RetryAfter}
	}
	return nil
}

// Delay makes every later call of method wait d before it is answered (0 removes the delay); a
// call whose client goes away during the wait is dropped. Tests use it to hold a process in its
// start-up (a slow getMe) or a send in flight.
func (s *Server) Delay(method string, d time.Duration) {
	s.mu.Lock()
	if d <= 0 {
		delete(s.delays, method)
	} else {
		s.delays[method] = d
	}
	s.mu.Unlock()
}

// wait blocks for method's delay, if any; it reports false when ctx ended first.
func (s *Server) wait(ctx context.Context, method string) bool {
	s.mu.Lock()
	d := s.delays[method]
	s.mu.Unlock()
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
