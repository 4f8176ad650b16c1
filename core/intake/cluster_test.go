package intake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestClusterSpreadsIntakeKeys checks the cluster backend is a real cluster: the keys of one
// prefix land on more than one master, so the one-key scripts are exercised across nodes.
func TestClusterSpreadsIntakeKeys(t *testing.T) {
	b := withPrefix(t, redistest.Cluster(t), nil)
	ctx := t.Context()
	l := NewLease(b.c, b.prefix)
	for i := range 30 {
		if _, err := l.TryAcquire(ctx, fmt.Sprintf("spread:%d", i), "a", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	holding := 0
	err := b.c.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, _, err := node.Scan(ctx, 0, b.prefix+"*", 1000).Result()
		mu.Lock()
		defer mu.Unlock()
		if len(keys) > 0 {
			holding++
		}
		return err
	})
	if err != nil || holding < 2 {
		t.Errorf("leases on %d masters (%v); want them spread over several", holding, err)
	}
}
