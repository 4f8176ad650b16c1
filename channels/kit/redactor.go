package kit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redacted stands in for a secret in the text of an error or a log line.
const Redacted = "[redacted]"

// Redactor keeps an adapter's secrets — tokens, signing secrets, the token part of an
// interaction's URL — out of the errors it returns and the lines it logs: every secret it holds
// and every match of its patterns becomes Redacted. The HTTP layer puts request URLs in its
// errors (*url.Error), and some platforms put the token in the URL, so an adapter passes every
// error of a call through Error and logs through Logger. Create with NewRedactor; safe for
// concurrent use.
type Redactor struct {
	mu       sync.RWMutex
	secrets  []string
	patterns []*regexp.Regexp
}

// NewRedactor returns a Redactor of secrets (empty ones are skipped).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Add(s)
	}
	return r
}

// Add makes secret hidden from now on (a workspace's token learnt at install).
func (r *Redactor) Add(secret string) {
	if secret == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.secrets, secret) {
		r.secrets = append(r.secrets, secret)
	}
}

// AddPattern hides every match of re: a match becomes re's first group (the part to keep, such
// as the path before an interaction's token; none when re has no group) followed by Redacted.
func (r *Redactor) AddPattern(re *regexp.Regexp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.patterns = append(r.patterns, re)
}

// String is s with every secret and pattern match hidden.
func (r *Redactor) String(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllString(s, "${1}"+Redacted)
	}
	return s
}

// Error returns err when its text holds no secret; otherwise a copy without them. A *url.Error
// (the HTTP layer's, naming the request's URL) is rebuilt with its URL hidden and keeps its
// cause (context.Canceled, a net error) for errors.Is and errors.As when the cause's own text
// is clean; anything else is flattened to its hidden text, as what it wraps holds the secret.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if r.String(text) == text {
		return err
	}
	if ue, ok := err.(*url.Error); ok {
		inner := ue.Err
		if inner != nil && r.String(inner.Error()) != inner.Error() {
			inner = errors.New(r.String(inner.Error()))
		}
		return &url.Error{Op: ue.Op, URL: r.String(ue.URL), Err: inner}
	}
	return errors.New(r.String(text))
}

// Logger returns log with every line's message and attribute values passed through String, so
// no log line carries a secret whatever it was given.
func (r *Redactor) Logger(log *slog.Logger) *slog.Logger {
	return slog.New(redactingHandler{r: r, next: log.Handler()})
}

// redactingHandler is the slog.Handler of Redactor.Logger.
type redactingHandler struct {
	r    *Redactor
	next slog.Handler
}

func (h redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return redactingHandler{r: h.r, next: h.next.WithAttrs(clean)}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{r: h.r, next: h.next.WithGroup(name)}
}

// attr is a with its value's text hidden: strings, errors and anything else printed as text.
func (h redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		clean := make([]slog.Attr, len(as))
		for i, g := range as {
			clean[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			if text := err.Error(); h.r.String(text) != text {
				return slog.String(a.Key, h.r.String(text))
			}
			return slog.Attr{Key: a.Key, Value: v}
		}
		if text := fmt.Sprint(v.Any()); h.r.String(text) != text {
			return slog.String(a.Key, h.r.String(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
