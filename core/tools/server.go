package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is where a server's connection is.
type State string

// Server states.
const (
	StateConnecting State = "connecting"
	StateUp         State = "up"
	StateDown       State = "down"
	StateStopped    State = "stopped"
)

// Backoff bounds between connection attempts of a server that is down.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// defaultPath is the PATH of a stdio server whose env does not set one: a fixed list, not the
// bot's own.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// server supervises one configured MCP server: it connects, lists the tools, relists on
// tools/list_changed, and reconnects with backoff when the connection ends (a stdio server
// that exits is restarted).
type server struct {
	cfg Server
	m   *Manager

	kick   chan struct{} // relist (tools/list_changed)
	reload chan struct{} // reconnect now

	mu       sync.Mutex
	session  *mcp.ClientSession
	up       chan struct{} // closed when a session is up; replaced when it goes
	state    State
	reason   string // why it is down, for /tools (no secrets: see downReason)
	since    time.Time
	tools    []offered
	skipped  []string
	failures int
	pids     []int // every stdio process started, for the process-table test
}

func newServer(m *Manager, cfg Server) *server {
	return &server{cfg: cfg, m: m, kick: make(chan struct{}, 1), reload: make(chan struct{}, 1),
		up: make(chan struct{}), state: StateConnecting, since: m.now()}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run keeps the server connected until ctx ends.
func (s *server) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		sess, cmd, err := s.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.setDown(err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			case <-s.reload:
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
		err = s.serve(ctx, sess)
		s.drop(sess, cmd)
		if ctx.Err() == nil && err != nil {
			s.setDown(err)
		}
	}
	s.mu.Lock()
	s.state, s.since, s.tools = StateStopped, s.m.now(), nil
	s.mu.Unlock()
	s.m.offerChanged()
	s.m.met.ServerState(s.cfg.Name, StateStopped)
}

// serve lists the tools of a new session and keeps them current until the session ends (its
// error), a reload is asked (nil), or ctx ends (nil).
func (s *server) serve(ctx context.Context, sess *mcp.ClientSession) error {
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	if err := s.list(ctx, sess); err != nil {
		_ = sess.Close()
		<-ended
		return err
	}
	s.setUp(sess)
	for {
		select {
		case <-ctx.Done():
			_ = sess.Close()
			<-ended
			return nil
		case err := <-ended:
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return fmt.Errorf("the connection ended: %w", err)
		case <-s.reload:
			_ = sess.Close()
			<-ended
			return nil
		case <-s.kick:
			if err := s.list(ctx, sess); err != nil {
				_ = sess.Close()
				<-ended
				return err
			}
			s.m.offerChanged()
		}
	}
}

// connect starts (stdio) or reaches (HTTP) the server and initializes a session.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, *exec.Cmd, error) {
	s.mu.Lock()
	if s.state != StateUp {
		s.state = StateConnecting
	}
	s.mu.Unlock()
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard", Version: s.m.opts.Version}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal(s.kick) },
	})
	cctx, cancel := context.WithTimeout(ctx, s.m.cfg.ConnectTimeout)
	defer cancel()
	if len(s.cfg.Command) > 0 {
		env, err := s.environ()
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Env, cmd.Dir = env, s.cfg.Dir
		cmd.Stderr = &stderrLog{log: s.m.log, server: s.cfg.Name}
		ownGroup(cmd)
		sess, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
		if err != nil {
			killGroup(cmd)
			return nil, nil, fmt.Errorf("starting %s: %w", s.cfg.Command[0], err)
		}
		s.mu.Lock()
		s.pids = append(s.pids, cmd.Process.Pid)
		s.mu.Unlock()
		return sess, cmd, nil
	}
	headers, err := s.headers()
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: &identityTransport{base: s.m.opts.Transport, headers: func() http.Header { return headers },
		key: s.m.cfg.IdentityKey, now: s.m.now}}
	sess, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", redactURL(s.cfg.URL), scrub(err, s.cfg.URL))
	}
	return sess, nil, nil
}

// environ is the stdio server's whole environment: its env, its env files, and a fixed PATH
// unless env sets one.
func (s *server) environ() ([]string, error) {
	vals := map[string]string{"PATH": defaultPath}
	for k, v := range s.cfg.Env {
		vals[k] = v
	}
	for k, p := range s.cfg.EnvFiles {
		v, err := readSecret(p)
		if err != nil {
			return nil, fmt.Errorf("env_file %s: %w", k, err)
		}
		vals[k] = v
	}
	out := make([]string, 0, len(vals))
	for k, v := range vals {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

func (s *server) headers() (http.Header, error) {
	h := http.Header{}
	for k, v := range s.cfg.Headers {
		h.Set(k, v)
	}
	for k, p := range s.cfg.HeaderFiles {
		v, err := readSecret(p)
		if err != nil {
			return nil, fmt.Errorf("headers_file %s: %w", k, err)
		}
		h.Set(k, v)
	}
	return h, nil
}

// maxSecretFile bounds a secret file; a wrong path must not be read whole.
const maxSecretFile = 64 << 10

// readSecret reads a secret file; its error never holds the contents.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("cannot read %s: %v", path, pe.Err)
		}
		return "", fmt.Errorf("cannot read %s", path)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s is larger than %d KiB", path, maxSecretFile>>10)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// list reads the server's tools and keeps those the configuration and the checks let through.
func (s *server) list(ctx context.Context, sess *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, s.m.cfg.ConnectTimeout)
	defer cancel()
	var keep []offered
	var skipped []string
	seen := map[string]bool{}
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			return fmt.Errorf("listing tools: %w", scrub(err, s.cfg.URL))
		}
		if t == nil || !s.included(t.Name) {
			continue
		}
		o, err := toOffered(s.cfg.Name, t)
		if err == nil && seen[o.Name] {
			err = fmt.Errorf("tool %q: another tool of the server has the offered name %s", t.Name, o.Name)
		}
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		seen[o.Name] = true
		o.timeout = s.m.cfg.CallTimeout
		if s.cfg.CallTimeout > 0 {
			o.timeout = s.cfg.CallTimeout
		}
		keep = append(keep, o)
	}
	s.mu.Lock()
	old := s.skipped
	s.tools, s.skipped = keep, skipped
	s.mu.Unlock()
	if !slices.Equal(old, skipped) {
		for _, why := range skipped {
			s.m.log.Warn("tools: skipping a malformed tool", "server", s.cfg.Name, "why", why)
		}
	}
	return nil
}

// included applies the server's include and exclude globs to a tool's own name.
func (s *server) included(name string) bool {
	if len(s.cfg.Include) > 0 && !matchAny(s.cfg.Include, name) {
		return false
	}
	return !matchAny(s.cfg.Exclude, name)
}

func (s *server) setUp(sess *mcp.ClientSession) {
	s.mu.Lock()
	wasDown := s.failures > 0
	s.session, s.state, s.reason, s.since, s.failures = sess, StateUp, "", s.m.now(), 0
	close(s.up)
	n := len(s.tools)
	s.mu.Unlock()
	s.m.offerChanged()
	s.m.met.ServerState(s.cfg.Name, StateUp)
	if wasDown {
		s.m.log.Info("tools: server is up again", "server", s.cfg.Name, "tools", n)
	} else {
		s.m.log.Info("tools: server connected", "server", s.cfg.Name, "tools", n)
	}
}

// setDown records a failed attempt or a lost connection; the first one of a streak is logged
// as a warning, the rest at debug level, so a server that stays down does not flood the log.
func (s *server) setDown(err error) {
	s.mu.Lock()
	s.failures++
	first := s.failures == 1
	if s.state != StateDown {
		s.since = s.m.now()
	}
	s.state, s.reason, s.tools = StateDown, downReason(err), nil
	s.mu.Unlock()
	s.m.offerChanged()
	s.m.met.ServerState(s.cfg.Name, StateDown)
	if first {
		s.m.log.Warn("tools: server is down; its tools are not offered until it is back (retrying with backoff)", "server", s.cfg.Name, "err", downReason(err))
	} else {
		s.m.log.Debug("tools: server still down", "server", s.cfg.Name, "err", downReason(err))
	}
}

// drop closes a session that ended and what is left of its process.
func (s *server) drop(sess *mcp.ClientSession, cmd *exec.Cmd) {
	s.mu.Lock()
	if s.session == sess {
		s.session = nil
		s.up = make(chan struct{})
	}
	s.mu.Unlock()
	_ = sess.Close()
	if cmd != nil {
		killGroup(cmd)
	}
}

// current returns the live session other than lost, waiting up to wait for one when the server
// is between two (or still on the lost one).
func (s *server) current(ctx context.Context, lost *mcp.ClientSession, wait time.Duration) *mcp.ClientSession {
	deadline := time.NewTimer(max(wait, 0))
	defer deadline.Stop()
	for {
		s.mu.Lock()
		sess, up := s.session, s.up
		s.mu.Unlock()
		stale := lost != nil && sess == lost
		if stale {
			sess = nil
		}
		if sess != nil || wait <= 0 {
			return sess
		}
		if stale {
			// The lost session is still the server's until its supervisor drops it: look again
			// shortly rather than wait on a channel that is already closed.
			select {
			case <-time.After(10 * time.Millisecond):
				continue
			case <-deadline.C:
				return nil
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-up:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// downReason is a short reason for logs and /tools: the error's text with the server's URL
// credentials removed, cut.
func downReason(err error) string {
	return cutUTF8(err.Error(), 300)
}

// redactURL drops the user information and query of a URL, where credentials could be.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the configured url)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// scrub replaces the configured URL in an error's text with its redacted form.
func scrub(err error, rawURL string) error {
	if err == nil || rawURL == "" || !strings.Contains(err.Error(), rawURL) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), rawURL, redactURL(rawURL)))
}

// stderrLog passes a stdio server's stderr to the log at debug level, a line at a time, cut.
type stderrLog struct {
	log    interface{ Debug(string, ...any) }
	server string
	mu     sync.Mutex
	buf    []byte
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.log.Debug("tools: server stderr", "server", w.server, "line", cutUTF8(string(w.buf[:i]), 500))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
