package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster: three redis-server processes in cluster mode on free ports, started once per test
// binary on first use (Cluster) and stopped by the package's TestMain (StopCluster). A suite that
// runs on it proves each of its scripts and commands keeps to one hash slot.

var cluster struct {
	once  sync.Once
	addrs []string
	procs []*exec.Cmd
	dir   string
	err   error
}

// Cluster is a client of the cluster, closed when the test ends. Without redis-server the test
// is skipped, except in CI (CI set), where it fails.
func Cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed; CI must run the cluster suite: %v", err)
		}
		t.Skip("!!! redis-server not installed: the Redis Cluster suite did NOT run (it runs in CI) !!!")
	}
	cluster.once.Do(func() { cluster.err = startCluster() })
	if cluster.err != nil {
		t.Fatalf("starting a 3-node Redis Cluster: %v", cluster.err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.addrs})
	t.Cleanup(func() { c.Close() })
	return c
}

// freeClusterPort finds a port that is free along with its cluster bus port (+10000).
func freeClusterPort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free port pair")
}

func startCluster() error {
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return err
	}
	cluster.dir = dir
	for i := range 3 {
		port, err := freeClusterPort()
		if err != nil {
			return err
		}
		cmd := exec.Command("redis-server",
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", i),
			"--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no")
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return err
		}
		cluster.procs = append(cluster.procs, cmd)
		cluster.addrs = append(cluster.addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range cluster.addrs {
		if err := pollNode(ctx, addr, func(c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
			return fmt.Errorf("node %s never answered: %w", addr, err)
		}
	}
	args := append([]string{"--cluster", "create"}, cluster.addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	for _, addr := range cluster.addrs {
		err := pollNode(ctx, addr, func(c *redis.Client) error {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return errors.New("cluster_state not ok")
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", addr, err)
		}
	}
	return nil
}

// pollNode retries check against one node until it passes or ctx ends.
func pollNode(ctx context.Context, addr string, check func(*redis.Client) error) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check(c)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// StopCluster kills the cluster's processes, if Cluster started them (by their own handles),
// and removes their directory. A package whose tests use Cluster calls it from TestMain.
func StopCluster() {
	for _, p := range cluster.procs {
		p.Process.Kill()
		p.Wait()
	}
	if cluster.dir != "" {
		os.RemoveAll(cluster.dir)
	}
}
