package threads

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// startClusterBackend is the cluster backend: a three-node Redis Cluster (redistest.Cluster),
// started once per test binary. The whole suite on it proves the scripts keep to one hash slot
// (Cluster refuses them otherwise).
func startClusterBackend(t testing.TB) dialer {
	t.Helper()
	redistest.Cluster(t) // started, or the test skipped (failed in CI)
	return func(t testing.TB) redis.UniversalClient { return redistest.Cluster(t) }
}

// TestClusterSpreadsConversations checks the cluster backend is a real cluster: conversations
// land on more than one master, so single-slot scripts are really exercised across nodes.
func TestClusterSpreadsConversations(t *testing.T) {
	c := startClusterBackend(t)(t).(*redis.ClusterClient)
	ctx := ctxT(t)
	s := newTestStore(t, c, Options{})
	for i := range 30 {
		if _, _, err := s.Conversations().Ensure(ctx, fmt.Sprintf("spread/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	holding := 0
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, _, err := node.Scan(ctx, 0, keysOf(s).prefix+"*", 1000).Result()
		mu.Lock()
		defer mu.Unlock()
		if len(keys) > 0 {
			holding++
		}
		return err
	})
	if err != nil || holding < 2 {
		t.Errorf("threads on %d masters (%v); want them spread over several", holding, err)
	}
}
