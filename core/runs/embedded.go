package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

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
	// ConnectTimeout is how long OpenRedis keeps trying a server that does not answer, with
	// backoff and one log line per attempt; 0 tries once.
	ConnectTimeout time.Duration
	// Logger receives the embedded-store announcement and the connection attempts (default
	// slog.Default()).
	Logger *slog.Logger
}

// embeddedTick is how often the embedded store's expiry times run down: a key given a TTL is
// gone within about this much of it.
const embeddedTick = time.Second

// runTTLClock runs the embedded store's TTLs down by the time that passed, every tick until
// stop closes. miniredis only expires keys when told how much time passed; without this the
// dedupe marks, delivery records and thread TTLs of a long-running `bot run` without Redis would
// stay forever and its memory only grow. Telling it walks every key under the server's lock, so
// a store grown large is told less often: the walk takes at most about 1 % of the time.
func runTTLClock(mr *miniredis.Miniredis, tick time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		mr.FastForward(now.Sub(last))
		last = now
		t.Reset(max(tick, 100*time.Since(now)))
	}
}

// ErrRedisUnreachable is what OpenRedis returns when the server did not answer within
// RedisOptions.ConnectTimeout.
var ErrRedisUnreachable = errors.New("redis does not answer")

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
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() { defer close(stopped); runTTLClock(mr, embeddedTick, stop) }()
		return c, func() error { close(stop); <-stopped; err := c.Close(); mr.Close(); return err }, true, nil
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
	if err := waitForRedis(ctx, client, o, log); err != nil {
		_ = client.Close()
		return nil, nil, false, err
	}
	if err := checkRedisVersion(ctx, client, o, log); err != nil {
		_ = client.Close()
		return nil, nil, false, err
	}
	return client, client.Close, false, nil
}

// minRedisMajor is the oldest Redis the stores run on: 7.0 is the first to take SET with NX
// and GET together (the outbound and outcome records are one such SET).
const minRedisMajor = 7

// ErrRedisTooOld is what OpenRedis returns for a server older than Redis 7.0.
var ErrRedisTooOld = errors.New("redis is too old")

// checkRedisVersion refuses a server older than Redis 7.0, before anything runs on it. A server
// that does not say its version (INFO refused, or a fork's own fields) is let through, with a
// warning: the first record written would fail on a server too old.
func checkRedisVersion(ctx context.Context, client redis.UniversalClient, o RedisOptions, log *slog.Logger) error {
	infoCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := client.Info(infoCtx, "server").Result()
	if err != nil {
		log.Warn("redis: could not read the server's version (INFO server); it must be Redis 7.0 or later",
			"addr", redisAddr(o), "err", err)
		return nil
	}
	v, major, ok := redisVersion(info)
	if !ok {
		log.Warn("redis: the server does not say its version (INFO server); it must be Redis 7.0 or later",
			"addr", redisAddr(o))
		return nil
	}
	if major < minRedisMajor {
		return fmt.Errorf("%w: %s runs Redis %s; Switchboard needs Redis %d.0 or later (or a compatible server such as Valkey): upgrade it, or point redis.url at one that is",
			ErrRedisTooOld, redisAddr(o), v, minRedisMajor)
	}
	return nil
}

// redisVersion reads redis_version from an INFO reply: the version as given and its major
// number. ok is false when the field is missing or does not start with a number.
func redisVersion(info string) (version string, major int, ok bool) {
	for line := range strings.Lines(info) {
		rest, found := strings.CutPrefix(line, "redis_version:")
		if !found {
			continue
		}
		version = strings.TrimSpace(rest)
		if version == "" || len(version) > 40 {
			return "", 0, false
		}
		digits := version
		if i := strings.IndexByte(digits, '.'); i >= 0 {
			digits = digits[:i]
		}
		n, err := strconv.Atoi(digits)
		if err != nil || n < 0 || len(digits) > 4 {
			return "", 0, false
		}
		return version, n, true
	}
	return "", 0, false
}

// waitForRedis pings until the server answers, ctx ends or o.ConnectTimeout has passed, backing
// off from 250 ms to 5 s between attempts and logging each failed one.
func waitForRedis(ctx context.Context, client redis.UniversalClient, o RedisOptions, log *slog.Logger) error {
	deadline := time.Now().Add(o.ConnectTimeout)
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		pingCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := client.Ping(pingCtx).Err()
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("redis: answering now", "addr", redisAddr(o), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redis: %w", ctx.Err())
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w at %s (%s mode) after %d attempt(s) in %s: %v", ErrRedisUnreachable,
				redisAddr(o), modeName(o.Mode), attempt, o.ConnectTimeout, err)
		}
		wait = min(wait, left)
		log.Warn("redis: not answering yet; retrying", "addr", redisAddr(o), "attempt", attempt,
			"retry_in", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redis: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// redisAddr names the server(s) for messages: host:port only, never the URL (it may hold a
// password).
func redisAddr(o RedisOptions) string {
	if o.URL != "" {
		if opt, err := redis.ParseURL(o.URL); err == nil {
			return opt.Addr
		}
		return "redis.url"
	}
	return strings.Join(o.Addrs, ",")
}

func modeName(m RedisMode) RedisMode {
	if m == "" {
		return RedisSingle
	}
	return m
}
