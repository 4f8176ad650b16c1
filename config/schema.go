package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// secretKind says how a key's value is hidden.
type secretKind int

const (
	notSecret secretKind = iota
	// secretFull values are never shown: Redacted prints "[redacted]".
	secretFull
	// secretURL values are URLs whose user information is masked (redis.url).
	secretURL
)

// leaf is one configuration key that holds a value.
type leaf struct {
	key    string // "telegram.api_url"
	typ    reflect.Type
	index  []int // reflect field index path from Config
	secret secretKind
}

// fileSuffix turns a secret key into its indirection key: telegram.token → telegram.token_file.
const fileSuffix = "_file"

// keySchema is every key of Config, derived once from the koanf tags.
type keySchema struct {
	leaves   map[string]*leaf
	ordered  []*leaf         // in struct order
	sections map[string]bool // "telegram", "access.telegram", …
	// fileKeys maps "<secret>_file" to its secret leaf.
	fileKeys map[string]*leaf
}

var schema = buildSchema(reflect.TypeFor[Config]())

var durationType = reflect.TypeFor[time.Duration]()

func buildSchema(t reflect.Type) *keySchema {
	s := &keySchema{
		leaves:   map[string]*leaf{},
		sections: map[string]bool{},
		fileKeys: map[string]*leaf{},
	}
	s.walk(t, "", nil)
	for _, l := range s.ordered {
		if l.secret == notSecret {
			continue
		}
		fk := l.key + fileSuffix
		if _, clash := s.leaves[fk]; clash {
			panic("config: key " + fk + " clashes with the _file form of " + l.key)
		}
		s.fileKeys[fk] = l
	}
	return s
}

func (s *keySchema) walk(t reflect.Type, prefix string, index []int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			// A field without a key would silently never load; refuse it at init.
			panic(fmt.Sprintf("config: field %s.%s has no koanf key", t.Name(), f.Name))
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		idx := append(append([]int(nil), index...), i)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			s.sections[key] = true
			s.walk(f.Type, key, idx)
			continue
		}
		l := &leaf{key: key, typ: f.Type, index: idx}
		switch f.Tag.Get("secret") {
		case "":
		case "true":
			l.secret = secretFull
		case "url":
			l.secret = secretURL
		default:
			panic("config: bad secret tag on " + key)
		}
		s.leaves[key] = l
		s.ordered = append(s.ordered, l)
	}
}

// Keys returns every configuration key path (leaves only, e.g. "runs.workers"), sorted. The
// "<secret>_file" forms are not included; see SecretKeys.
func Keys() []string {
	out := make([]string, 0, len(schema.leaves))
	for k := range schema.leaves {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SecretKeys returns, sorted, the keys whose values are secrets: each may also be given as
// "<key>_file", and Redacted never prints its value.
func SecretKeys() []string {
	var out []string
	for _, l := range schema.ordered {
		if l.secret != notSecret {
			out = append(out, l.key)
		}
	}
	sort.Strings(out)
	return out
}

// suggest returns the known key closest to an unknown one, or "" when nothing is close.
func (s *keySchema) suggest(unknown string) string {
	best, bestDist := "", 0
	try := func(k string) {
		d := editDistance(unknown, k)
		limit := max(2, len(unknown)/4)
		if d <= limit && (best == "" || d < bestDist || (d == bestDist && k < best)) {
			best, bestDist = k, d
		}
	}
	for k := range s.leaves {
		try(k)
	}
	for k := range s.fileKeys {
		try(k)
	}
	for k := range s.sections {
		try(k)
	}
	return best
}

func editDistance(a, b string) int {
	if a == b {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe names a key's type for an error message.
func describe(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "a duration with a unit, like 30s or 1h"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "a list of strings (or one comma-separated string)"
	}
	return t.String()
}

// joinKey joins key path segments with dots.
func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// isURLKey reports whether a non-secret key holds a URL whose user information Redacted masks.
func isURLKey(key string) bool {
	return strings.HasSuffix(key, "url")
}
