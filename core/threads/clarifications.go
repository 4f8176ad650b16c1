package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clarifications are the questions runs ask users and wait on (a form, an approval): at most
// one pending per conversation, each answered exactly once, and the index of approvals to
// expire. Their Redis scripts are in redis_clarifications.go.
type Clarifications struct{ *shared }

// AnyoneMayAnswer as a clarification's AllowedUserID lets any user's answer be taken.
const AnyoneMayAnswer = "*"

// maxClarificationIDLen bounds caller-chosen clarification ids.
const maxClarificationIDLen = 128

// ClarificationState is where a clarification is in its life.
type ClarificationState string

// The states of a clarification. Expiry is not a state: a pending clarification is expired when
// the store's clock passes its ExpiresAt.
const (
	StatePending   ClarificationState = "pending"
	StateAnswered  ClarificationState = "answered"
	StateCancelled ClarificationState = "cancelled"
)

// Clarification is a question a run asked the user, waiting for an answer. A conversation has at
// most one pending clarification: putting a new one cancels the previous one.
type Clarification struct {
	// ID names the clarification (e.g. in a button's callback); Clarifications.Put generates one
	// when empty. It must be unique across conversations.
	ID string
	// ConvKey is the conversation the question was asked in.
	ConvKey string
	// RunID is the run to resume with the answer.
	RunID string
	// AllowedUserID is the only channel_user_id whose answer is accepted; AnyoneMayAnswer
	// ("*") accepts any, for a caller that checks who may answer itself (admin approvals).
	AllowedUserID string
	// Form is the question as the caller describes it; opaque JSON to the store.
	Form json.RawMessage
	// CreatedAt is when it was asked (Now if zero on put); ExpiresAt is when it stops being
	// answerable (CreatedAt + ClarificationTTL if zero on put). Both are kept to the millisecond.
	CreatedAt time.Time
	ExpiresAt time.Time

	// State, AnsweredBy and AnsweredAt are filled by the store on reads; put ignores them.
	State      ClarificationState
	AnsweredBy string
	AnsweredAt time.Time
}

// Put records c as its conversation's pending clarification and returns it as
// stored (id, times and state filled in). A pending clarification the conversation already had
// is cancelled. Putting the same id again for the same conversation changes nothing (a retry is
// safe and never reopens an answered clarification); an id used by another conversation is
// ErrDuplicateClarification. The records get a Redis TTL of ExpiresAt + ClarificationRetention
// for clean-up; answerability is judged against the store's clock, not that TTL.
func (cl *Clarifications) Put(ctx context.Context, c Clarification) (Clarification, error) {
	now := cl.opts.Now()
	if c.ID == "" {
		c.ID = cl.ids.next(now)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = c.CreatedAt.Add(cl.opts.ClarificationTTL)
	}
	c.CreatedAt = time.UnixMilli(c.CreatedAt.UnixMilli()).UTC()
	c.ExpiresAt = time.UnixMilli(c.ExpiresAt.UnixMilli()).UTC()
	c.State, c.AnsweredBy, c.AnsweredAt = StatePending, "", time.Time{}
	if err := checkClarification(c, now); err != nil {
		return Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, err)
	}
	data, err := encodeClarification(c)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, err)
	}
	ttl := c.ExpiresAt.Sub(now) + cl.opts.ClarificationRetention
	first, owner, err := cl.r.recordOnce(ctx, cl.keys.clarIndex(c.ID), []byte(c.ConvKey), ttl)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, err)
	}
	if !first && string(owner) != c.ConvKey {
		return Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, ErrDuplicateClarification)
	}
	if _, _, err := cl.r.putClarification(ctx, cl.keys.conv(c.ConvKey).clar, c.ID, c.AllowedUserID, c.ExpiresAt, data, ttl); err != nil {
		return Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, err)
	}
	return c, nil
}

func checkClarification(c Clarification, now time.Time) error {
	if err := checkConvKey(c.ConvKey); err != nil {
		return err
	}
	switch {
	case len(c.ID) > maxClarificationIDLen:
		return invalid("clarification id longer than %d bytes", maxClarificationIDLen)
	case c.RunID == "":
		return invalid("clarification has no run to resume")
	case c.AllowedUserID == "":
		return invalid("clarification has no user allowed to answer")
	case !c.ExpiresAt.After(now):
		return invalid("clarification expires at %s, not after now", c.ExpiresAt.Format(time.RFC3339Nano))
	case len(c.Form) > 0 && !json.Valid(c.Form):
		return invalid("clarification form is not valid JSON")
	}
	return nil
}

// Get returns the clarification with that id in its current state, without
// changing it. It returns ErrClarificationNotFound for an unknown id and
// ErrClarificationCancelled when a newer clarification of the conversation replaced it.
func (cl *Clarifications) Get(ctx context.Context, id string) (Clarification, error) {
	key, err := cl.clarKey(ctx, id)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: get clarification %q: %w", id, err)
	}
	fields, err := cl.r.hgetall(ctx, key)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: get clarification %q: %w", id, err)
	}
	switch {
	case len(fields) == 0:
		return Clarification{}, fmt.Errorf("threads: get clarification %q: %w", id, ErrClarificationNotFound)
	case fields["id"] != id:
		return Clarification{}, fmt.Errorf("threads: get clarification %q: replaced by a newer one: %w", id, ErrClarificationCancelled)
	}
	c, err := decodeClarification(key, fields)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: get clarification %q: %w", id, err)
	}
	return c, nil
}

// clarKey finds the conversation hash of a clarification through its id index.
func (cl *Clarifications) clarKey(ctx context.Context, id string) (string, error) {
	if id == "" || len(id) > maxClarificationIDLen {
		return "", ErrClarificationNotFound
	}
	conv, found, err := cl.r.get(ctx, cl.keys.clarIndex(id))
	if err != nil {
		return "", err
	}
	if !found {
		return "", ErrClarificationNotFound
	}
	return cl.keys.conv(string(conv)).clar, nil
}

// Take claims the clarification for answeringUserID, atomically and exactly once,
// and returns it (State answered). Otherwise it changes nothing and returns, in this order of
// precedence: ErrClarificationNotFound (unknown id); ErrClarificationAnswered (already taken);
// ErrClarificationCancelled (the conversation was reset, or a newer clarification replaced it —
// then whatever its state was, as its record is gone);
// ErrClarificationExpired (the store's clock is at or past ExpiresAt); a *ForeignAnswerError,
// matching ErrNotYourClarification, when answeringUserID is not the allowed user — the
// clarification stays pending for the right one. With Answered, Expired and the foreign error
// the clarification is returned too, so the caller can, e.g., edit the form's message.
func (cl *Clarifications) Take(ctx context.Context, id, answeringUserID string) (Clarification, error) {
	return cl.take(ctx, id, answeringUserID, "")
}

// TakeExpired claims, atomically and exactly once, a pending clarification whose
// time is up, for nobody (AnsweredBy empty) — an approval that expires is decided as denied
// this way. It returns ErrClarificationOpen while time is left, and otherwise what
// Take returns.
func (cl *Clarifications) TakeExpired(ctx context.Context, id string) (Clarification, error) {
	return cl.take(ctx, id, "", "expire")
}

func (cl *Clarifications) take(ctx context.Context, id, answeringUserID, mode string) (Clarification, error) {
	key, err := cl.clarKey(ctx, id)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: take clarification %q: %w", id, err)
	}
	status, fields, err := cl.r.takeClarification(ctx, key, id, answeringUserID, cl.opts.Now(), mode)
	if err != nil {
		return Clarification{}, fmt.Errorf("threads: take clarification %q: %w", id, err)
	}
	var c Clarification
	if fields != nil {
		if c, err = decodeClarification(key, fields); err != nil {
			return Clarification{}, fmt.Errorf("threads: take clarification %q: %w", id, err)
		}
	}
	var sentinel error
	switch status {
	case "ok":
		return c, nil
	case "answered":
		sentinel = ErrClarificationAnswered
	case "cancelled", "replaced":
		sentinel = ErrClarificationCancelled
	case "expired":
		sentinel = ErrClarificationExpired
	case "open":
		sentinel = ErrClarificationOpen
	case "foreign":
		return c, fmt.Errorf("threads: take clarification: %w", &ForeignAnswerError{ClarificationID: id, UserID: answeringUserID})
	case "notfound":
		sentinel = ErrClarificationNotFound
	default:
		return Clarification{}, fmt.Errorf("threads: take clarification %q: %w", id, corrupt(key, "clarification state or expiry unreadable", nil))
	}
	return c, fmt.Errorf("threads: take clarification %q: %w", id, sentinel)
}

// Pending returns the conversation's open clarification — pending and not expired
// by the store's clock — so a plain-text reply can be routed as its answer. ok is false when
// there is none.
func (cl *Clarifications) Pending(ctx context.Context, convKey string) (c Clarification, ok bool, err error) {
	return cl.convClarification(ctx, "pending", convKey, cl.r.hgetall)
}

// Withdraw cancels the conversation's pending clarification, so that neither a
// click nor a typed reply answers it any more (Clarifications.Take then says
// ErrClarificationCancelled), and returns it. ok is false when none was open: none at all, or
// only one already answered, cancelled or expired (an expired one is cancelled all the same).
func (cl *Clarifications) Withdraw(ctx context.Context, convKey string) (c Clarification, ok bool, err error) {
	c, ok, err = cl.convClarification(ctx, "withdraw", convKey, cl.r.withdrawClarification)
	if ok {
		c.State = StateCancelled
	}
	return c, ok, err
}

// convClarification reads the conversation's clarification record with read (op names it in
// errors) and reports whether it was open.
func (cl *Clarifications) convClarification(ctx context.Context, op, convKey string, read func(context.Context, string) (map[string]string, error)) (Clarification, bool, error) {
	if err := checkConvKey(convKey); err != nil {
		return Clarification{}, false, fmt.Errorf("threads: %s clarification: %w", op, err)
	}
	key := cl.keys.conv(convKey).clar
	fields, err := read(ctx, key)
	if err != nil {
		return Clarification{}, false, fmt.Errorf("threads: %s clarification of %q: %w", op, convKey, err)
	}
	c, ok, err := openClarification(cl.opts.Now(), key, fields)
	if err != nil {
		return Clarification{}, false, fmt.Errorf("threads: %s clarification of %q: %w", op, convKey, err)
	}
	return c, ok, nil
}

// openClarification decodes a clarification hash read from key and reports whether it is open:
// pending and not expired at now (the store's clock).
func openClarification(now time.Time, key string, fields map[string]string) (Clarification, bool, error) {
	if len(fields) == 0 {
		return Clarification{}, false, nil
	}
	c, err := decodeClarification(key, fields)
	if err != nil {
		return Clarification{}, false, err
	}
	if c.State != StatePending || !now.Before(c.ExpiresAt) {
		return Clarification{}, false, nil
	}
	return c, true, nil
}

// Expiry is a clarification due to be expired: an approval whose time ran out resumes its run
// as denied.
type Expiry struct {
	ID      string
	ConvKey string
}

// dueExpiriesScript hands each due entry of the expiry index to exactly one caller.
// KEYS[1] the index (zset, score = unix ms). ARGV: now (unix ms), limit.
// Returns the members taken.
var dueExpiriesScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due
`)

// ScheduleExpiry indexes the clarification id of conversation convKey to be expired at at.
// Scheduling it again moves it.
func (cl *Clarifications) ScheduleExpiry(ctx context.Context, id, convKey string, at time.Time) error {
	if strings.Contains(id, "\n") {
		return fmt.Errorf("threads: schedule expiry %q: %w", id, invalid("an id with a newline"))
	}
	if err := cl.r.c.ZAdd(ctx, cl.keys.expiries(), redis.Z{Score: float64(at.UnixMilli()), Member: id + "\n" + convKey}).Err(); err != nil {
		return fmt.Errorf("threads: schedule expiry %q: %w", id, err)
	}
	return nil
}

// DueExpiries takes up to limit entries due at now from the index, atomically: each is returned
// to one caller only, whichever process asks first.
func (cl *Clarifications) DueExpiries(ctx context.Context, now time.Time, limit int) ([]Expiry, error) {
	v, err := dueExpiriesScript.Run(ctx, cl.r.c, []string{cl.keys.expiries()}, strconv.FormatInt(now.UnixMilli(), 10), limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("threads: due expiries: %w", err)
	}
	out := make([]Expiry, 0, len(v))
	for _, m := range v {
		id, conv, ok := strings.Cut(m, "\n")
		if !ok {
			continue
		}
		out = append(out, Expiry{ID: id, ConvKey: conv})
	}
	return out, nil
}
