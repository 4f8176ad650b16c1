package rdb

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// pipelineFlights is how many pipelines are in flight at once: two let the client encode one
// batch while Redis answers the other.
const pipelineFlights = 2

// newPipeliner returns the group that sends the script calls of concurrent callers in shared
// pipelines. Every call is one script on one conversation's slot or the global slot.
func newPipeliner(c redis.UniversalClient) *group[*redis.Cmd] {
	return &group[*redis.Cmd]{flights: pipelineFlights, send: func(ctx context.Context, cmds []*redis.Cmd) {
		if len(cmds) == 1 {
			_ = c.Process(ctx, cmds[0])
			return
		}
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, cmd := range cmds {
				_ = p.Process(ctx, cmd)
			}
			return nil
		})
	}}
}

// eval runs script on keys in a shared pipeline: EVALSHA, and EVAL when Redis does not know the
// script yet. The retry is safe: a NOSCRIPT call ran nothing, and it is this caller's only call
// in flight. A ctx already ended fails at once; one that ends while the call waits does not
// withdraw it (see group.do).
func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if err := ctx.Err(); err != nil {
		cmd.SetErr(err) // as a lone call would: an ended ctx sends nothing
		return cmd
	}
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // routes by the first key on a cluster
	}
	s.pipe.do(ctx, cmd)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return script.Eval(ctx, s.c, keys, args...)
	}
	return cmd
}
