// Package redisscan walks the keys that match a pattern, on one Redis server or on every master
// of a Redis Cluster: the admin operations' scans (queue depth, the rescue scan, forgetting a
// workspace) share it.
package redisscan

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// count is the SCAN page size.
const count = 200

// Each calls fn with every key matching pattern, one call at a time — a cluster's masters are
// scanned concurrently, but fn needs no lock of its own. A key may be passed twice (SCAN's
// guarantee) and keys written during the walk may be missed. fn's error ends the walk (on a
// cluster, the walk of its master) and is returned.
func Each(ctx context.Context, c redis.UniversalClient, pattern string, fn func(key string) error) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, count).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			err := fn(it.Val())
			mu.Unlock()
			if err != nil {
				return err
			}
		}
		return it.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	}
	return scan(ctx, c)
}
