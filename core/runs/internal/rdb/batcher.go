package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// eval runs script on keys in a pipeline shared with concurrent callers (internal/redisbatch):
// EVALSHA, and EVAL when Redis does not know the script yet. A ctx already ended fails at once;
// one that ends while the call waits does not withdraw it.
func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.pipe.Eval(ctx, script, keys, args...)
}
