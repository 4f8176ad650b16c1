package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// RedisMode selects how RedisOptions.Addrs are used.
type RedisMode string

// The Redis deployment modes.
const (
	RedisSingle   RedisMode = "single"
	RedisSentinel RedisMode = "sentinel"
	RedisCluster  RedisMode = "cluster"
)

// RedisOptions say where the store is (the redis.* configuration keys).
type RedisOptions struct {
	// URL is redis://… or rediss://… for a single server; it wins over Addrs in single mode.
	URL string
	// Mode is single (default), sentinel or cluster.
	Mode RedisMode
	// Addrs are host:port of the servers, the sentinels, or the cluster seeds.
	Addrs []string
	// MasterName is the sentinel master's name.
	MasterName string
	// Password authenticates to the servers (never logged).
	Password string
	// Logger receives the embedded-store announcement (default slog.Default()).
	Logger *slog.Logger
}

// OpenRedis connects to the configured Redis and checks it answers. With no URL and no Addrs it
// starts an in-process miniredis instead (embedded is true) and announces that state lives in
// this process only; the same queue code runs on it. closeFn closes the client and, when
// embedded, stops the server.
func OpenRedis(ctx context.Context, o RedisOptions) (client redis.UniversalClient, closeFn func() error, embedded bool, err error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.URL == "" && len(o.Addrs) == 0 {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, false, fmt.Errorf("runs: start embedded store: %w", err)
		}
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		log.Info("embedded store (miniredis): state lives in this process only", "addr", mr.Addr())
		return c, func() error { err := c.Close(); mr.Close(); return err }, true, nil
	}
	switch o.Mode {
	case "", RedisSingle:
		if o.URL != "" {
			opt, err := redis.ParseURL(o.URL)
			if err != nil {
				// The URL may hold a password: do not echo it.
				return nil, nil, false, errors.New("runs: redis.url is not a valid redis:// or rediss:// URL")
			}
			if o.Password != "" {
				opt.Password = o.Password
			}
			client = redis.NewClient(opt)
		} else {
			client = redis.NewClient(&redis.Options{Addr: o.Addrs[0], Password: o.Password})
		}
	case RedisSentinel:
		if o.MasterName == "" || len(o.Addrs) == 0 {
			return nil, nil, false, errors.New("runs: sentinel mode needs redis.addrs and a master name")
		}
		client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: o.MasterName, SentinelAddrs: o.Addrs, Password: o.Password})
	case RedisCluster:
		if len(o.Addrs) == 0 {
			return nil, nil, false, errors.New("runs: cluster mode needs redis.addrs")
		}
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: o.Addrs, Password: o.Password})
	default:
		return nil, nil, false, fmt.Errorf("runs: unknown redis.mode %q (want single, sentinel or cluster)", o.Mode)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, false, fmt.Errorf("runs: connect to redis (%s mode): %w", modeName(o.Mode), err)
	}
	return client, client.Close, false, nil
}

func modeName(m RedisMode) RedisMode {
	if m == "" {
		return RedisSingle
	}
	return m
}
