package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Problem is one thing wrong with the configuration.
type Problem struct {
	// Key is the key path, like "runs.workers" or "auth.signing_keys[1]".
	Key string
	// Message says what is wrong, for an operator; it never contains a secret's value.
	Message string
	// Source, when known, says where the value came from: the config file's path or
	// "environment variable BOT_…". Validate leaves it empty: by then the layers are merged.
	Source string
}

func (p Problem) String() string {
	s := p.Message
	if p.Key != "" {
		s = p.Key + ": " + s
	}
	if p.Source != "" {
		s += " (" + p.Source + ")"
	}
	return s
}

// ValidationError lists every problem Load or Validate found. Use errors.As to get at it.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "config: invalid"
	case 1:
		return "config: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Has reports whether some problem concerns key (or an item of it, like key[2]).
func (e *ValidationError) Has(key string) bool {
	for _, p := range e.Problems {
		if p.Key == key || strings.HasPrefix(p.Key, key+"[") {
			return true
		}
	}
	return false
}

// validator collects problems. Its checks are only ever given non-secret values to quote.
type validator struct {
	problems []Problem
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// telegramIDs requires numeric user ids.
func (v *validator) telegramIDs(key string, ids []string) {
	for i, id := range ids {
		if _, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64); err != nil && strings.TrimSpace(id) != "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("Telegram ids are numbers (the user's id), got %q: "+
				"a user finds theirs with /whoami", id))
		}
	}
}

func (v *validator) discordIDs(key string, ids []string) {
	for i, id := range ids {
		if _, err := strconv.ParseUint(strings.TrimSpace(id), 10, 64); err != nil && strings.TrimSpace(id) != "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("Discord ids are numbers (the user's id), got %q: "+
				"with Developer Mode on, right-click the user → Copy User ID, or ask them to run /bot whoami", id))
		}
	}
}

func (v *validator) add(key, msg string) {
	v.problems = append(v.problems, Problem{Key: key, Message: msg})
}

func (v *validator) oneOf(key, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(key, fmt.Sprintf("must be one of %s, got %q", strings.Join(allowed, ", "), val))
}

func (v *validator) atLeast(key string, n, lowest int) {
	if n < lowest {
		v.add(key, fmt.Sprintf("must be at least %d, got %d", lowest, n))
	}
}

// inRange requires lowest ≤ n ≤ highest; unit follows highest in the message (" bytes").
func (v *validator) inRange(key string, n, lowest, highest int, unit string) {
	if n < lowest || n > highest {
		v.add(key, fmt.Sprintf("must be from %d to %d%s, got %d", lowest, highest, unit, n))
	}
}

func (v *validator) positiveDuration(key string, d time.Duration) {
	if d <= 0 {
		v.add(key, fmt.Sprintf("must be a positive duration, got %s", d))
	}
}

// httpURL requires an absolute http(s) URL. The value is not quoted: it may carry user
// information.
func (v *validator) httpURL(key, raw string) {
	if raw == "" {
		v.add(key, "required")
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL")
	}
}

func (v *validator) hostPort(key, addr string, emptyHostOK bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(key, fmt.Sprintf("must be host:port, got %q", addr))
		return
	}
	if host == "" && !emptyHostOK {
		v.add(key, fmt.Sprintf("needs a host, got %q", addr))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && !emptyHostOK) {
		v.add(key, fmt.Sprintf("needs a port number, got %q", addr))
	}
}

func (v *validator) nonEmptyItems(key string, items []string) {
	for i, s := range items {
		if strings.TrimSpace(s) == "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), "must not be empty")
		}
	}
}
