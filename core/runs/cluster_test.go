package runs

import (
	"fmt"
	"net"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestSuiteOnCluster runs, on a three-master Redis Cluster of child redis-server processes
// (redistest.Cluster), the FIFO, lease-takeover, dead-letter and rescue tests through a ClusterClient: every script must find
// its keys in one slot.
func TestSuiteOnCluster(t *testing.T) {
	c := redistest.Cluster(t)
	t.Run("FIFO", func(t *testing.T) { testFIFO(t, c, 300, 30) })
	t.Run("lease expiry takeover", func(t *testing.T) { testLeaseExpiryTakeover(t, c) })
	t.Run("retry then dead letter", func(t *testing.T) { testRetryThenDeadLetter(t, c) })
	t.Run("rescue of an unhinted mailbox", func(t *testing.T) { testRescueInProcess(t, c) })
}

// freePort is a free port whose +10000 is free too.
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
