package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// The in-memory store and Queue the router's unit tests run on (newHarness): what Redis holds
// for threads.Store and runs.Queue, in maps behind one lock. They keep the documented semantics
// the router relies on — the contract tests (contract_test.go) run the same cases on them and on
// Redis — and nothing else: no session logs, outbound records, tokens or expiries, and no pool
// (memQueue.work stands for a worker).

// memDB is the one "Redis" a memStore and a memQueue share, as threads.Store and runs.Queue share
// one Redis: the router's intake reads the queue's event marks (Queue.SeenKey) through the store.
// Every operation takes mu once, so each is atomic, as Redis's scripts and SET NX are.
type memDB struct {
	mu sync.Mutex
	// kv holds the string keys with a lifetime: claims, marks, the queue's event marks. They
	// expire on the wall clock, as Redis TTLs do; the harness clock moves only the store's
	// judgement of clarification expiry, as threads.Options.Now does.
	kv map[string]memValue

	threads   map[string]*memThread // by conversation key
	clars     map[string]*memClar   // the latest clarification of a conversation, by its key
	clarIndex map[string]string     // clarification id → conversation key
	allow     map[string]map[string]bool
	deny      map[string]map[string]bool

	mailboxes map[string]*memMailbox // by conversation hash tag
	seq       int64                  // enqueue order across conversations
	paused    bool
	dead      []runs.DeadLetter
	counters  map[string]int64
	recent    []memCount
}

type memValue struct {
	v   []byte
	exp time.Time
}

func newMemDB() *memDB {
	return &memDB{
		kv: map[string]memValue{}, threads: map[string]*memThread{}, clars: map[string]*memClar{}, clarIndex: map[string]string{},
		allow: map[string]map[string]bool{}, deny: map[string]map[string]bool{},
		mailboxes: map[string]*memMailbox{}, counters: map[string]int64{},
	}
}

// get is GET: found is false for a missing or expired key. The caller holds mu.
func (db *memDB) get(key string) ([]byte, bool) {
	v, ok := db.kv[key]
	if !ok {
		return nil, false
	}
	if !time.Now().Before(v.exp) {
		delete(db.kv, key)
		return nil, false
	}
	return v.v, true
}

// set is SET PX (ttl positive). The caller holds mu.
func (db *memDB) set(key string, value []byte, ttl time.Duration) {
	db.kv[key] = memValue{v: bytes.Clone(value), exp: time.Now().Add(max(ttl, time.Millisecond))}
}

// The argument checks of threads.Store, whose errors wrap threads.ErrInvalidArgument.
const (
	memMaxClaimKey = 512
	memMaxConvKey  = 1024
	memMaxClarID   = 128
)

func memInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{threads.ErrInvalidArgument}, args...)...)
}

func memCheckClaimKey(key string) error {
	if key == "" || len(key) > memMaxClaimKey {
		return memInvalid("key must be 1 to %d bytes", memMaxClaimKey)
	}
	return nil
}

func memCheckTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return memInvalid("ttl must be positive")
	}
	return nil
}

func memCheckConvKey(convKey string) error {
	if convKey == "" || len(convKey) > memMaxConvKey {
		return memInvalid("conversation key must be 1 to %d bytes", memMaxConvKey)
	}
	return nil
}

func memCheckAccess(platform, userID string) error {
	if platform == "" || len(platform) > 64 {
		return memInvalid("platform must be 1 to 64 bytes")
	}
	if userID == "" || len(userID) > 256 {
		return memInvalid("user id must be 1 to 256 bytes")
	}
	return nil
}

// memStore is the router's Inbox and Threads in memory, and its Clarifications
// (memClarifications, through Clars), as a threads.Store's components keep them in Redis.
type memStore struct {
	db  *memDB
	now func() time.Time // threads.Options.Now: judges clarification expiry
}

var (
	_ Inbox          = (*memStore)(nil)
	_ Clarifications = memClarifications{}
	_ Threads        = (*memStore)(nil)
)

// memClarifications is the clarifications of a memStore (threads.Clarifications in memory).
type memClarifications struct{ *memStore }

// Clars is s's clarifications.
func (s *memStore) Clars() testClarifications { return memClarifications{s} }

func newMemStore(db *memDB, now func() time.Time) *memStore {
	if now == nil {
		now = time.Now
	}
	return &memStore{db: db, now: now}
}

// Claim values, as threads keeps them: "1" done, "p:<token>" pending under a token.
const (
	memClaimDone    = "1"
	memClaimPending = "p:"
)

func memClaimKey(key string) string { return "claim:" + key }
func memMarkKey(key string) string  { return "mark:" + key }

// Intake checks the whole request first (an invalid one touches nothing), then claims and reads
// in one step, each part as its single-call counterpart.
func (s *memStore) Intake(_ context.Context, req threads.IntakeRequest) (threads.IntakeResult, error) {
	if err := memCheckIntake(req); err != nil {
		return threads.IntakeResult{}, fmt.Errorf("threads: intake: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	var res threads.IntakeResult
	if req.ClaimKey != "" {
		key := memClaimKey(req.ClaimKey)
		v, held := s.db.get(key)
		switch {
		case req.ClaimToken == "":
			res.Claimed = !held
			if !held {
				s.db.set(key, []byte(memClaimDone), req.ClaimTTL)
			}
		case !held:
			res.Claimed = true
			s.db.set(key, []byte(memClaimPending+req.ClaimToken), req.ClaimTTL)
		default:
			// SET NX GET: taken again under the same token (its lifetime unchanged), else
			// reported pending under another one, or done.
			res.Claimed = string(v) == memClaimPending+req.ClaimToken
			res.ClaimPending = !res.Claimed && strings.HasPrefix(string(v), memClaimPending)
		}
	}
	if req.SeenKey != "" {
		_, res.Seen = s.db.get(req.SeenKey)
	}
	if req.Platform != "" || req.UserID != "" {
		res.Allowed, res.Denied = s.db.allow[req.Platform][req.UserID], s.db.deny[req.Platform][req.UserID]
	}
	if req.ConvKey != "" {
		res.Pending, res.HasPending = s.open(req.ConvKey)
	}
	if req.MarkedKey != "" {
		res.Marked, res.IsMarked = s.db.get(memMarkKey(req.MarkedKey))
	}
	for _, m := range req.Marks {
		s.db.set(memMarkKey(m.Key), m.Value, m.TTL)
	}
	return res, nil
}

func memCheckIntake(req threads.IntakeRequest) error {
	if req.ClaimKey != "" {
		if err := memCheckClaimKey(req.ClaimKey); err != nil {
			return err
		}
		if err := memCheckTTL(req.ClaimTTL); err != nil {
			return err
		}
	}
	if len(req.SeenKey) > 2*memMaxClaimKey {
		return memInvalid("seen key must be at most %d bytes", 2*memMaxClaimKey)
	}
	if req.Platform != "" || req.UserID != "" {
		if err := memCheckAccess(req.Platform, req.UserID); err != nil {
			return err
		}
	}
	if req.ConvKey != "" {
		if err := memCheckConvKey(req.ConvKey); err != nil {
			return err
		}
	}
	if req.MarkedKey != "" {
		if err := memCheckClaimKey(req.MarkedKey); err != nil {
			return err
		}
	}
	for _, m := range req.Marks {
		if err := memCheckClaimKey(m.Key); err != nil {
			return err
		}
		if err := memCheckTTL(m.TTL); err != nil {
			return err
		}
	}
	return nil
}

// Claim takes key for ttl if nobody holds it (SET NX PX).
func (s *memStore) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	if err := memCheckClaimKey(key); err != nil {
		return false, fmt.Errorf("threads: claim: %w", err)
	}
	if err := memCheckTTL(ttl); err != nil {
		return false, fmt.Errorf("threads: claim: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if _, held := s.db.get(memClaimKey(key)); held {
		return false, nil
	}
	s.db.set(memClaimKey(key), []byte(memClaimDone), ttl)
	return true, nil
}

// CompleteClaim marks the claim done for ttl unless another token holds it.
func (s *memStore) CompleteClaim(_ context.Context, key, token string, ttl time.Duration) error {
	if err := memCheckClaimKey(key); err != nil {
		return fmt.Errorf("threads: complete claim: %w", err)
	}
	if err := memCheckTTL(ttl); err != nil {
		return fmt.Errorf("threads: complete claim: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if v, held := s.db.get(memClaimKey(key)); held && string(v) != memClaimPending+token {
		return nil
	}
	s.db.set(memClaimKey(key), []byte(memClaimDone), ttl)
	return nil
}

// ReleaseClaim deletes the claim if it is still pending under token.
func (s *memStore) ReleaseClaim(_ context.Context, key, token string) error {
	if err := memCheckClaimKey(key); err != nil {
		return fmt.Errorf("threads: release claim: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if v, held := s.db.get(memClaimKey(key)); held && string(v) == memClaimPending+token {
		delete(s.db.kv, memClaimKey(key))
	}
	return nil
}

// Release drops a claim, whoever holds it.
func (s *memStore) Release(_ context.Context, key string) error {
	if err := memCheckClaimKey(key); err != nil {
		return fmt.Errorf("threads: release: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	delete(s.db.kv, memClaimKey(key))
	return nil
}

// Mark stores value under key for ttl, replacing any earlier value.
func (s *memStore) Mark(_ context.Context, key string, value []byte, ttl time.Duration) error {
	if err := memCheckClaimKey(key); err != nil {
		return fmt.Errorf("threads: mark: %w", err)
	}
	if err := memCheckTTL(ttl); err != nil {
		return fmt.Errorf("threads: mark: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.set(memMarkKey(key), value, ttl)
	return nil
}

// Marked returns what Mark stored under key.
func (s *memStore) Marked(_ context.Context, key string) ([]byte, bool, error) {
	if err := memCheckClaimKey(key); err != nil {
		return nil, false, fmt.Errorf("threads: marked: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	v, found := s.db.get(memMarkKey(key))
	return bytes.Clone(v), found, nil
}

// Unmark deletes a mark.
func (s *memStore) Unmark(_ context.Context, key string) error {
	if err := memCheckClaimKey(key); err != nil {
		return fmt.Errorf("threads: unmark: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	delete(s.db.kv, memMarkKey(key))
	return nil
}

// AllowUser puts userID on platform's allow list and takes it off the deny list.
func (s *memStore) AllowUser(_ context.Context, platform, userID string) error {
	return s.setAccess(platform, userID, s.db.allow, s.db.deny)
}

// DenyUser puts userID on platform's deny list and takes it off the allow list.
func (s *memStore) DenyUser(_ context.Context, platform, userID string) error {
	return s.setAccess(platform, userID, s.db.deny, s.db.allow)
}

func (s *memStore) setAccess(platform, userID string, add, rem map[string]map[string]bool) error {
	if err := memCheckAccess(platform, userID); err != nil {
		return fmt.Errorf("threads: access: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if add[platform] == nil {
		add[platform] = map[string]bool{}
	}
	add[platform][userID] = true
	delete(rem[platform], userID)
	return nil
}

// AccessOverride reports the runtime decisions on userID (the tests read them).
func (s *memStore) AccessOverride(_ context.Context, platform, userID string) (allowed, denied bool, err error) {
	if err := memCheckAccess(platform, userID); err != nil {
		return false, false, fmt.Errorf("threads: access override: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	return s.db.allow[platform][userID], s.db.deny[platform][userID], nil
}

// memThread is a conversation's thread record; settings are kept encoded, as Redis keeps them,
// so a caller's map is never shared.
type memThread struct {
	id, session string
	created     time.Time
	settings    []byte
}

func (th *memThread) thread(convKey string) threads.Thread {
	out := threads.Thread{ID: th.id, ConvKey: convKey, CreatedAt: th.created, SessionID: th.session}
	if th.settings != nil {
		_ = json.Unmarshal(th.settings, &out.Settings)
	}
	return out
}

func (s *memStore) newThread(settings []byte) *memThread {
	now := s.now()
	return &memThread{id: runs.NewRunID(), session: runs.NewRunID(), created: time.UnixMilli(now.UnixMilli()).UTC(), settings: settings}
}

// Ensure returns the conversation's thread, creating it if there is none.
func (s *memStore) Ensure(_ context.Context, convKey string) (threads.Thread, bool, error) {
	if err := memCheckConvKey(convKey); err != nil {
		return threads.Thread{}, false, fmt.Errorf("threads: ensure: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	th, ok := s.db.threads[convKey]
	if !ok {
		th = s.newThread(nil)
		s.db.threads[convKey] = th
	}
	return th.thread(convKey), !ok, nil
}

// Get returns the conversation's thread, or threads.ErrThreadNotFound (the tests read it).
func (s *memStore) Get(_ context.Context, convKey string) (threads.Thread, error) {
	if err := memCheckConvKey(convKey); err != nil {
		return threads.Thread{}, fmt.Errorf("threads: get: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	th, ok := s.db.threads[convKey]
	if !ok {
		return threads.Thread{}, fmt.Errorf("threads: get %q: %w", convKey, threads.ErrThreadNotFound)
	}
	return th.thread(convKey), nil
}

// Reset starts the conversation over: a new thread and session keeping the settings, and its
// pending clarification (expired or not) cancelled.
func (s *memStore) Reset(_ context.Context, convKey string) (threads.Thread, error) {
	if err := memCheckConvKey(convKey); err != nil {
		return threads.Thread{}, fmt.Errorf("threads: reset: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	var settings []byte
	if old, ok := s.db.threads[convKey]; ok {
		settings = old.settings
	}
	th := s.newThread(settings)
	s.db.threads[convKey] = th
	if c := s.db.clars[convKey]; c != nil && c.state == threads.StatePending {
		c.state = threads.StateCancelled
	}
	return th.thread(convKey), nil
}

// SetSettings replaces the thread's settings; threads.ErrThreadNotFound without a thread.
func (s *memStore) SetSettings(_ context.Context, convKey string, settings threads.Settings) error {
	if err := memCheckConvKey(convKey); err != nil {
		return fmt.Errorf("threads: set settings: %w", err)
	}
	b, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("threads: set settings %q: %w", convKey, memInvalid("settings: %v", err))
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	th, ok := s.db.threads[convKey]
	if !ok {
		return fmt.Errorf("threads: set settings %q: %w", convKey, threads.ErrThreadNotFound)
	}
	th.settings = b
	return nil
}

// GetSettings returns the thread's settings (the tests read them).
func (s *memStore) GetSettings(ctx context.Context, convKey string) (threads.Settings, error) {
	th, err := s.Get(ctx, convKey)
	if err != nil {
		return threads.Settings{}, err
	}
	return th.Settings, nil
}

// memClar is a conversation's latest clarification: what was put, and its state. Records are
// kept for the store's life (Redis drops them ClarificationRetention after they expire, a day
// later than any test looks).
type memClar struct {
	c          threads.Clarification // as put, times to the millisecond
	state      threads.ClarificationState
	answeredBy string
	answeredAt time.Time
}

func (r *memClar) read() threads.Clarification {
	c := r.c
	c.Form = bytes.Clone(c.Form)
	c.State = r.state
	if r.state == threads.StateAnswered {
		c.AnsweredBy, c.AnsweredAt = r.answeredBy, r.answeredAt
	}
	return c
}

// Put makes c its conversation's pending clarification (the tests ask questions
// with it, as the lead does): a pending one it had is replaced, the same id put again changes
// nothing, and an id another conversation uses is threads.ErrDuplicateClarification.
func (s memClarifications) Put(_ context.Context, c threads.Clarification) (threads.Clarification, error) {
	now := s.now()
	if c.ID == "" {
		c.ID = runs.NewRunID()
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = c.CreatedAt.Add(threads.DefaultClarificationTTL)
	}
	c.CreatedAt = time.UnixMilli(c.CreatedAt.UnixMilli()).UTC()
	c.ExpiresAt = time.UnixMilli(c.ExpiresAt.UnixMilli()).UTC()
	c.State, c.AnsweredBy, c.AnsweredAt = threads.StatePending, "", time.Time{}
	if err := memCheckClarification(c, now); err != nil {
		return threads.Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, err)
	}
	stored := c
	stored.Form = nil
	if len(c.Form) > 0 {
		// Stored as Redis stores it: compact JSON, and a "null" form reads back as none.
		var b bytes.Buffer
		if err := json.Compact(&b, c.Form); err == nil && b.String() != "null" {
			stored.Form = b.Bytes()
		}
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if owner, ok := s.db.clarIndex[c.ID]; ok && owner != c.ConvKey {
		return threads.Clarification{}, fmt.Errorf("threads: put clarification %q: %w", c.ID, threads.ErrDuplicateClarification)
	}
	s.db.clarIndex[c.ID] = c.ConvKey
	if cur := s.db.clars[c.ConvKey]; cur == nil || cur.c.ID != c.ID {
		s.db.clars[c.ConvKey] = &memClar{c: stored, state: threads.StatePending}
	}
	return c, nil
}

func memCheckClarification(c threads.Clarification, now time.Time) error {
	if err := memCheckConvKey(c.ConvKey); err != nil {
		return err
	}
	switch {
	case len(c.ID) > memMaxClarID:
		return memInvalid("clarification id longer than %d bytes", memMaxClarID)
	case c.RunID == "":
		return memInvalid("clarification has no run to resume")
	case c.AllowedUserID == "":
		return memInvalid("clarification has no user allowed to answer")
	case !c.ExpiresAt.After(now):
		return memInvalid("clarification expires at %s, not after now", c.ExpiresAt.Format(time.RFC3339Nano))
	case len(c.Form) > 0 && !json.Valid(c.Form):
		return memInvalid("clarification form is not valid JSON")
	}
	return nil
}

// record finds clarification id: threads.ErrClarificationNotFound for an unknown id,
// threads.ErrClarificationCancelled when a newer one of its conversation replaced it. The caller
// holds mu.
func (s *memStore) record(id string) (*memClar, error) {
	convKey, ok := s.db.clarIndex[id]
	if !ok {
		return nil, threads.ErrClarificationNotFound
	}
	r := s.db.clars[convKey]
	if r == nil {
		return nil, threads.ErrClarificationNotFound
	}
	if r.c.ID != id {
		return nil, fmt.Errorf("replaced by a newer one: %w", threads.ErrClarificationCancelled)
	}
	return r, nil
}

// Get returns clarification id in its current state.
func (s memClarifications) Get(_ context.Context, id string) (threads.Clarification, error) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	r, err := s.record(id)
	if err != nil {
		return threads.Clarification{}, fmt.Errorf("threads: get clarification %q: %w", id, err)
	}
	return r.read(), nil
}

// Take takes clarification id for answeringUserID exactly once. Otherwise it
// changes nothing and fails with, in this order: not found; answered; cancelled (withdrawn or
// replaced); expired by the store's clock; a *threads.ForeignAnswerError when answeringUserID is
// not the allowed user and that is not threads.AnyoneMayAnswer. With answered, cancelled (not
// replaced), expired and foreign the clarification is returned too.
func (s memClarifications) Take(_ context.Context, id, answeringUserID string) (threads.Clarification, error) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	r, err := s.record(id)
	if err != nil {
		return threads.Clarification{}, fmt.Errorf("threads: take clarification %q: %w", id, err)
	}
	now := time.UnixMilli(s.now().UnixMilli()).UTC()
	var sentinel error
	switch {
	case r.state == threads.StateAnswered:
		sentinel = threads.ErrClarificationAnswered
	case r.state == threads.StateCancelled:
		sentinel = threads.ErrClarificationCancelled
	case !now.Before(r.c.ExpiresAt):
		sentinel = threads.ErrClarificationExpired
	case r.c.AllowedUserID != answeringUserID && r.c.AllowedUserID != threads.AnyoneMayAnswer:
		return r.read(), fmt.Errorf("threads: take clarification: %w", &threads.ForeignAnswerError{ClarificationID: id, UserID: answeringUserID})
	default:
		r.state, r.answeredBy, r.answeredAt = threads.StateAnswered, answeringUserID, now
		return r.read(), nil
	}
	return r.read(), fmt.Errorf("threads: take clarification %q: %w", id, sentinel)
}

// open returns the conversation's clarification when it is pending and not expired by the
// store's clock. The caller holds mu.
func (s *memStore) open(convKey string) (threads.Clarification, bool) {
	r := s.db.clars[convKey]
	if r == nil || r.state != threads.StatePending || !s.now().Before(r.c.ExpiresAt) {
		return threads.Clarification{}, false
	}
	return r.read(), true
}

// Pending returns the conversation's open clarification.
func (s memClarifications) Pending(_ context.Context, convKey string) (threads.Clarification, bool, error) {
	if err := memCheckConvKey(convKey); err != nil {
		return threads.Clarification{}, false, fmt.Errorf("threads: pending clarification: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	c, ok := s.open(convKey)
	return c, ok, nil
}

// Withdraw cancels the conversation's pending clarification — an expired one too,
// though only an open one is returned with ok.
func (s memClarifications) Withdraw(_ context.Context, convKey string) (threads.Clarification, bool, error) {
	if err := memCheckConvKey(convKey); err != nil {
		return threads.Clarification{}, false, fmt.Errorf("threads: withdraw clarification: %w", err)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	c, ok := s.open(convKey)
	if r := s.db.clars[convKey]; r != nil && r.state == threads.StatePending {
		r.state = threads.StateCancelled
	}
	if ok {
		c.State = threads.StateCancelled
	}
	return c, ok, nil
}
