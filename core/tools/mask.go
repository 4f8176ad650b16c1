package tools

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// Masked replaces the values of secret-looking keys in DisplayArgs.
const Masked = "••••••"

// secretKey matches key names whose values are never shown: token, password, secret, key,
// credential, auth, cookie, session and their spellings (api_key, apiKey, x-auth-token, …).
var secretKey = regexp.MustCompile(`(?i)(token|passw|pwd|secret|key|credential|auth|cookie|session|signature|private)`)

// DisplayArgs is how a call's arguments are shown to people (an approval card): pretty JSON,
// values of secret-looking keys masked at any depth, cut to max bytes. It never fails: arguments
// that are not JSON are not shown.
func DisplayArgs(raw json.RawMessage, max int) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "(the arguments are not valid JSON)"
	}
	b, err := json.MarshalIndent(maskValue(v), "", "  ")
	if err != nil {
		return "(the arguments cannot be shown)"
	}
	s := string(b)
	if len(s) > max {
		s = cutUTF8(s, max) + "\n…"
	}
	return s
}

func maskValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if secretKey.MatchString(k) && x[k] != nil {
				out[k] = Masked
				continue
			}
			out[k] = maskValue(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = maskValue(x[i])
		}
		return out
	case string:
		if looksLikeSecret(x) {
			return Masked
		}
	}
	return v
}

// looksLikeSecret catches well-known credential shapes in values whatever their key.
func looksLikeSecret(s string) bool {
	for _, p := range []string{"xoxb-", "xoxp-", "xapp-", "sk-", "ghp_", "github_pat_", "Bearer ", "AKIA"} {
		if strings.HasPrefix(s, p) && len(s) > len(p)+8 {
			return true
		}
	}
	return false
}
