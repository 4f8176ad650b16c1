package runs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRedisVersion(t *testing.T) {
	for _, c := range []struct {
		name, info string
		version    string
		major      int
		ok         bool
	}{
		{"redis 7.0", "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n", "7.0.15", 7, true},
		{"redis 7.4", "redis_version:7.4.1\r\n", "7.4.1", 7, true},
		{"redis 6.2", "# Server\r\nredis_version:6.2.14\r\n", "6.2.14", 6, true},
		{"valkey", "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n", "7.2.4", 7, true},
		{"only a major", "redis_version:8\n", "8", 8, true},
		{"no version field", "# Server\r\nredis_mode:standalone\r\n", "", 0, false},
		{"empty", "", "", 0, false},
		{"empty version", "redis_version:\r\n", "", 0, false},
		{"not a number", "redis_version:seven\r\n", "", 0, false},
		{"negative", "redis_version:-7.0\r\n", "", 0, false},
		{"absurd major", "redis_version:99999999999999999999.0\r\n", "", 0, false},
		{"too long", "redis_version:7." + strings.Repeat("1", 100) + "\r\n", "", 0, false},
		{"field name inside another", "xredis_version:7.0.0\r\n", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, major, ok := redisVersion(c.info)
			if v != c.version || major != c.major || ok != c.ok {
				t.Fatalf("redisVersion(%q) = %q, %d, %v; want %q, %d, %v", c.info, v, major, ok, c.version, c.major, c.ok)
			}
		})
	}
}

func FuzzRedisVersion(f *testing.F) {
	f.Add("# Server\r\nredis_version:7.0.15\r\n")
	f.Add("redis_version:6.2.0\n")
	f.Add("redis_version:\n")
	f.Fuzz(func(t *testing.T, info string) {
		v, major, ok := redisVersion(info)
		if !ok {
			if v != "" || major != 0 {
				t.Fatalf("not ok but %q, %d", v, major)
			}
			return
		}
		if major < 0 || v == "" || len(v) > 40 || !strings.Contains(info, "redis_version:"+v) {
			t.Fatalf("redisVersion(%q) = %q, %d", info, v, major)
		}
	})
}

// serveVersion is a Redis server of one version, as little as OpenRedis needs: RESP2 only
// (HELLO is refused, as by Redis 5), PING and INFO; anything else is OK.
func serveVersion(t *testing.T, version string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					var reply string
					switch strings.ToUpper(args[0]) {
					case "HELLO":
						reply = "-ERR unknown command 'HELLO'\r\n"
					case "PING":
						reply = "+PONG\r\n"
					case "INFO":
						body := "# Server\r\nredis_version:" + version + "\r\nredis_mode:standalone\r\n"
						reply = "$" + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n"
					default:
						reply = "+OK\r\n"
					}
					if _, err := io.WriteString(conn, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad bulk header %q", line)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

func TestOpenRedisRefusesRedisOlderThan7(t *testing.T) {
	addr := serveVersion(t, "6.2.14")
	var logs bytes.Buffer
	_, _, _, err := OpenRedis(context.Background(), RedisOptions{
		URL: "redis://:s3cret-pass@" + addr + "/0", ConnectTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if !errors.Is(err, ErrRedisTooOld) {
		t.Fatalf("OpenRedis() = %v, want ErrRedisTooOld\n%s", err, logs.String())
	}
	for _, want := range []string{"6.2.14", "7.0 or later", addr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error()+logs.String(), "s3cret-pass") {
		t.Errorf("the password leaked: %v\n%s", err, logs.String())
	}
}

func TestOpenRedisTakesRedis7AndAServerThatHidesItsVersion(t *testing.T) {
	for _, version := range []string{"7.0.0", "8.2.1", "not-a-version"} {
		t.Run(version, func(t *testing.T) {
			addr := serveVersion(t, version)
			var logs bytes.Buffer
			c, closeFn, _, err := OpenRedis(context.Background(), RedisOptions{
				URL: "redis://" + addr + "/0", ConnectTimeout: 5 * time.Second,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatalf("OpenRedis() = %v\n%s", err, logs.String())
			}
			defer closeFn()
			if c == nil {
				t.Fatal("no client")
			}
			hidden := strings.Contains(logs.String(), "does not say its version")
			if hidden != (version == "not-a-version") {
				t.Errorf("warning about the version = %v for %q\n%s", hidden, version, logs.String())
			}
		})
	}
}
