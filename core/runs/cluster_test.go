package runs

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSuiteOnCluster starts a three-master Redis Cluster of child redis-server processes and runs
// the FIFO, lease-takeover, dead-letter and rescue tests through a ClusterClient: every script must find
// its keys in one slot.
func TestSuiteOnCluster(t *testing.T) {
	c := startCluster(t)
	t.Run("FIFO", func(t *testing.T) { testFIFO(t, c, 300, 30) })
	t.Run("lease expiry takeover", func(t *testing.T) { testLeaseExpiryTakeover(t, c) })
	t.Run("retry then dead letter", func(t *testing.T) { testRetryThenDeadLetter(t, c) })
	t.Run("rescue of an unhinted mailbox", func(t *testing.T) { testRescueInProcess(t, c) })
}

func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server and redis-cli are required in CI: %v %v", err1, err2)
		}
		t.Skip("SKIPPING THE CLUSTER SUITE: redis-server/redis-cli not installed (this fails in CI)")
	}
	dir := t.TempDir()
	var addrs []string
	for range 3 {
		port := freePort(t)
		cmd := exec.Command(server, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		addrs = append(addrs, addr)
		waitPing(t, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		n := redis.NewClient(&redis.Options{Addr: a})
		eventually(t, 20*time.Second, "cluster_state:ok on "+a, func() bool {
			info, err := n.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		_ = n.Close()
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	eventually(t, 10*time.Second, "the cluster client to see every slot", func() bool {
		return c.ForEachShard(context.Background(), func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }) == nil &&
			c.Set(context.Background(), "probe{a}", 1, time.Second).Err() == nil &&
			c.Set(context.Background(), "probe{b}", 1, time.Second).Err() == nil
	})
	return c
}

func freePort(t testing.TB) int {
	t.Helper()
	// The cluster bus uses port+10000: pick ports whose bus port is free too.
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port+10000 > 65535 {
			continue
		}
		if b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			_ = b.Close()
			return port
		}
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

func waitPing(t *testing.T, addr string) {
	t.Helper()
	n := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer n.Close()
	eventually(t, 10*time.Second, "redis-server on "+addr, func() bool { return n.Ping(context.Background()).Err() == nil })
}
