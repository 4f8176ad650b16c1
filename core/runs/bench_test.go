package runs

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkThroughput measures enqueue → run → ack with a no-op handler, 16 producers and 256
// conversations. Per run it reports:
//
//	roundtrips/run  network round trips the client made (a go-redis hook: one per command sent
//	                alone, one per pipeline)
//	commands/run    commands the client sent (INFO commandstats deltas of the commands the queue
//	                sends itself; pipelined ones count one each)
//	rediscalls/run  every command Redis executed, those inside scripts included
//	redis-µs/run    Redis CPU (INFO cpu, user+sys) per run: the server's share of the ceiling
//	client-µs/run   this process's CPU (getrusage, user+sys) per run: producers, workers and the
//	                go-redis client; with redis-µs/run it bounds runs/s at cores / (sum) µs
//
// It runs against a private redis-server child (so other clients do not pollute the counters)
// when one is installed, else against 127.0.0.1:6379.
func BenchmarkThroughput(b *testing.B) {
	c := benchRedis(b)
	var trips tripCounter
	c.AddHook(&trips)
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			q := newQueue(b, c, func(o *Options) {
				o.Workers = workers
				o.MaxPending, o.MaxPerConversation = -1, -1
				o.Lease = 30 * time.Second
			})
			var done atomic.Int64
			all := make(chan struct{})
			n := int64(b.N)
			p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
				if done.Add(1) == n {
					close(all)
				}
				return OutcomeAnswered, nil
			}), nil)
			if err != nil {
				b.Fatal(err)
			}
			envs := make([]*Envelope, b.N)
			for i := range envs {
				envs[i] = signedEnv(q.opt.Signer, testConv(i%256), "x")
			}
			if err := p.Start(ctx); err != nil {
				b.Fatal(err)
			}
			before := commandCalls(b, c)
			cpuBefore := redisCPU(b, c)
			tripsBefore := trips.n.Load()
			clientBefore := processCPU(b)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			const producers = 16
			for w := range producers {
				wg.Go(func() {
					for i := w; i < b.N; i += producers {
						if err := q.Enqueue(ctx, envs[i]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			<-all
			elapsed := time.Since(start)
			b.StopTimer()
			client := processCPU(b) - clientBefore
			if err := p.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			rt := trips.n.Load() - tripsBefore
			after := commandCalls(b, c)
			cpu := redisCPU(b, c) - cpuBefore
			// Commands the client sends count as commands; the rest ran inside scripts.
			var sent, calls int64
			var parts []string
			for k, v := range after {
				if strings.HasSuffix(k, ".usec") {
					if d := v - before[k]; d > 0 && clientSent[strings.TrimSuffix(k, ".usec")] {
						parts = append(parts, fmt.Sprintf("%s=%.1fµs", k, float64(d)/float64(b.N)))
					}
					continue
				}
				if d := v - before[k]; d > 0 && k != "info" {
					calls += d
					if clientSent[k] {
						sent += d
					}
					parts = append(parts, fmt.Sprintf("%s=%.2f", k, float64(d)/float64(b.N)))
				}
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			b.ReportMetric(float64(rt)/float64(b.N), "roundtrips/run")
			b.ReportMetric(float64(sent)/float64(b.N), "commands/run")
			b.ReportMetric(float64(calls)/float64(b.N), "rediscalls/run")
			b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "redis-µs/run")
			b.ReportMetric(client.Seconds()*1e6/float64(b.N), "client-µs/run")
			if b.N >= 1000 {
				b.Logf("per run: %s", strings.Join(parts, " "))
			}
		})
	}
}

// clientSent are the commands the queue sends itself; every other command in the stats ran inside
// one of its Lua scripts. ZREM is both (the ready script's; the rare refused enqueue's) and counts
// as a script's.
var clientSent = map[string]bool{"evalsha": true, "eval": true, "xreadgroup": true, "xautoclaim": true,
	"xclaim": true, "publish": true, "xgroup": true, "subscribe": true, "ping": true, "hello": true, "script": true,
	"client|setinfo": true, "zadd": true, "zrangebyscore": true}

// tripCounter is a go-redis hook counting network round trips: a command sent alone is one, a
// pipeline is one.
type tripCounter struct{ n atomic.Int64 }

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmd)
	}
}

func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// processCPU is this process's CPU time so far (user + sys).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU reads the server's CPU time so far (INFO cpu, user + sys).
func redisCPU(b *testing.B, c redis.UniversalClient) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

func benchRedis(b *testing.B) redis.UniversalClient {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return realRedis(b)
	}
	port := freePort(b)
	cmd := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	eventually(b, 10*time.Second, "the private redis-server", func() bool { return c.Ping(context.Background()).Err() == nil })
	return c
}

// commandCalls reads INFO commandstats: command name → calls, and "<name>.usec" → µs spent.
func commandCalls(b *testing.B, c redis.UniversalClient) map[string]int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")+".usec"] = n
			}
		}
	}
	return out
}
