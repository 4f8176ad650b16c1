package threads

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis of the router's inbox: the claims' scripts, the access lists' MULTI and pipeline,
// and the pipeline of one Intake. Each is tested in redis_inbox_test.go.

// Claim values. A claim taken with a token holds "p:<token>" while its event is being handled
// (pending); completing it replaces that with claimDone. A claim taken without a token holds
// claimDone at once (Claim, and Intake without ClaimToken).
const (
	claimPendingPrefix = "p:"
	claimDone          = "1"
)

// releaseClaimScript deletes a pending claim if it still holds the caller's token.
// KEYS[1] claim. ARGV: pending value. Returns 1 if deleted.
var releaseClaimScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// completeClaimScript marks a claim done for ttl unless another attempt holds it: it is set when
// absent (expired meanwhile) or still pending under the caller's token.
// KEYS[1] claim. ARGV: pending value, done value, ttl (ms). Returns 1 if set.
var completeClaimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

func (r rdb) releaseClaim(ctx context.Context, key, pending string) error {
	return r.b.Eval(ctx, releaseClaimScript, []string{key}, pending).Err()
}

func (r rdb) completeClaim(ctx context.Context, key, pending string, ttl time.Duration) error {
	return r.b.Eval(ctx, completeClaimScript, []string{key}, pending, claimDone, ttlMs(ttl)).Err()
}

// moveMember adds member to the set add and removes it from rem in one MULTI; the two sets share
// a hash tag (see keyspace.access).
func (r rdb) moveMember(ctx context.Context, add, rem, member string) error {
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, add, member)
		p.SRem(ctx, rem, member)
		return nil
	})
	return err
}

// memberOfBoth reports whether member is in set a and in set b, in one pipelined round trip.
func (r rdb) memberOfBoth(ctx context.Context, a, b, member string) (inA, inB bool, err error) {
	var ca, cb *redis.BoolCmd
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		ca = p.SIsMember(ctx, a, member)
		cb = p.SIsMember(ctx, b, member)
		return nil
	})
	if err != nil {
		return false, false, err
	}
	return ca.Val(), cb.Val(), nil
}

// intakeOps are the commands of one Intake round trip; a step whose key is empty is left out.
type intakeOps struct {
	claimKey string
	claimTTL time.Duration
	// pending is the claim's value while pending ("p:<token>"); empty: claim as Claim does.
	pending string
	seenKey string
	// allowKey and denyKey are checked for member when both are set.
	allowKey, denyKey, member string
	clarKey                   string
	markedKey                 string
	marks                     []markOp
}

// markOp is one SET PX of a mark.
type markOp struct {
	key   string
	value []byte
	ttl   time.Duration
}

// intakeReply is what an intake round trip read; claimed reports that claimKey was taken.
type intakeReply struct {
	claimed         bool
	claimPending    bool // held pending by another token
	seen            bool
	allowed, denied bool
	clar            map[string]string
	marked          []byte
	isMarked        bool
}

// intake runs ops together (in a pipeline shared with concurrent callers). The claim is SET NX PX
// (with GET when pending); the reads see the state as it was before the pipeline's writes only
// where they touch the same keys, which they never do. On an error the reply still says whether
// the claim was taken, so the caller can give it back.
func (r rdb) intake(ctx context.Context, ops intakeOps) (intakeReply, error) {
	c := newIntakeCmds(ctx, ops)
	if len(c.all) == 0 {
		return intakeReply{}, nil
	}
	r.b.Do(ctx, c.all...) // errors are read per command (reply): a missing mark is redis.Nil, not a failure
	return c.reply(ops.pending)
}

// intakeCmds are the commands of one intake round trip: all of them in order, and each by its
// part, nil for a part ops leave out.
type intakeCmds struct {
	all         []redis.Cmder
	claim       *redis.BoolCmd
	holder      *redis.StringCmd // a pending claim's SET NX GET: nil when taken, else who holds it
	seen        *redis.IntCmd
	allow, deny *redis.BoolCmd
	clar        *redis.MapStringStringCmd
	marked      *redis.StringCmd
	sets        []*redis.StatusCmd
}

// newIntakeCmds makes the commands of ops' parts.
func newIntakeCmds(ctx context.Context, ops intakeOps) *intakeCmds {
	c := &intakeCmds{all: make([]redis.Cmder, 0, 7+len(ops.marks))}
	switch {
	case ops.claimKey != "" && ops.pending != "":
		// One command takes the claim or says who holds it (SET NX GET, Redis 7.0): this token
		// (a retry after a release that failed), another attempt still pending, or a completed
		// one.
		c.holder = redis.NewStringCmd(ctx, withPX([]any{"set", ops.claimKey, ops.pending}, ops.claimTTL, "nx", "get")...)
		c.all = append(c.all, c.holder)
	case ops.claimKey != "":
		c.claim = redis.NewBoolCmd(ctx, withPX([]any{"set", ops.claimKey, claimDone}, ops.claimTTL, "nx")...)
		c.all = append(c.all, c.claim)
	}
	if ops.seenKey != "" {
		c.seen = redis.NewIntCmd(ctx, "exists", ops.seenKey)
		c.all = append(c.all, c.seen)
	}
	if ops.allowKey != "" && ops.denyKey != "" {
		c.allow = redis.NewBoolCmd(ctx, "sismember", ops.allowKey, ops.member)
		c.deny = redis.NewBoolCmd(ctx, "sismember", ops.denyKey, ops.member)
		c.all = append(c.all, c.allow, c.deny)
	}
	if ops.clarKey != "" {
		c.clar = redis.NewMapStringStringCmd(ctx, "hgetall", ops.clarKey)
		c.all = append(c.all, c.clar)
	}
	if ops.markedKey != "" {
		c.marked = redis.NewStringCmd(ctx, "get", ops.markedKey)
		c.all = append(c.all, c.marked)
	}
	c.sets = make([]*redis.StatusCmd, 0, len(ops.marks))
	for _, m := range ops.marks {
		set := redis.NewStatusCmd(ctx, withPX([]any{"set", m.key, m.value}, m.ttl)...)
		c.sets = append(c.sets, set)
		c.all = append(c.all, set)
	}
	return c
}

// reply reads the commands' replies once they ran, and the first error among them (a missing
// key, redis.Nil, is none). pending is the claim's pending value, as in intakeOps.
func (c *intakeCmds) reply(pending string) (intakeReply, error) {
	var rep intakeReply
	var first error
	keep := func(err error) {
		if err != nil && !errors.Is(err, redis.Nil) && first == nil {
			first = err
		}
	}
	if c.claim != nil {
		rep.claimed = c.claim.Err() == nil && c.claim.Val()
		keep(c.claim.Err())
	}
	if c.holder != nil {
		v, err := c.holder.Result()
		rep.claimed = errors.Is(err, redis.Nil) || err == nil && v == pending
		rep.claimPending = err == nil && !rep.claimed && strings.HasPrefix(v, claimPendingPrefix)
		keep(err)
	}
	if c.seen != nil {
		rep.seen = c.seen.Val() > 0
		keep(c.seen.Err())
	}
	if c.allow != nil {
		rep.allowed, rep.denied = c.allow.Val(), c.deny.Val()
		keep(c.allow.Err())
		keep(c.deny.Err())
	}
	if c.clar != nil {
		rep.clar = c.clar.Val()
		keep(c.clar.Err())
	}
	if c.marked != nil {
		b, err := c.marked.Bytes()
		rep.marked, rep.isMarked = b, err == nil
		keep(err)
	}
	for _, set := range c.sets {
		keep(set.Err())
	}
	return rep, first
}
