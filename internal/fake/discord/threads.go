package discordfake

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"unicode/utf8"
)

// threads is Start Thread from Message (POST /channels/{channel}/messages/{message}/threads):
// the thread is a channel of its own, announced with THREAD_CREATE.
type threads struct {
	st    *store
	chans *channels
	msgs  *messages
	gw    *gateway
	// ignored are the fields Start Thread from Message ignores (IgnoreThreadFields); guarded by
	// st.mu.
	ignored map[string]bool
}

// threadBody is the body of Start Thread from Message, whose JSON params are name,
// auto_archive_duration and rate_limit_per_user (nullable) only.
type threadBody struct {
	Name                string `json:"name"`
	AutoArchiveDuration *int   `json:"auto_archive_duration"`
	RateLimitPerUser    *int   `json:"rate_limit_per_user"`
}

// IgnoreThreadFields makes Start Thread from Message ignore fields it does not take instead of
// refusing them (checkThreadBody), as the fake did before it checked them: for running a build
// that sends them (before the bot sent its own body, discordgo's ThreadStart added invitable) on
// the path it took then. The request still counts as a conformance violation.
func (t *threads) IgnoreThreadFields(fields ...string) {
	t.st.mu.Lock()
	defer t.st.mu.Unlock()
	if t.ignored == nil {
		t.ignored = map[string]bool{}
	}
	for _, f := range fields {
		t.ignored[f] = true
	}
}

// checkThreadBody applies Start Thread from Message's params: a name of 1–100 characters, an
// auto_archive_duration of 60, 1440, 4320 or 10080 minutes, a rate_limit_per_user of 0–21600
// seconds or null, and no other field but those in ignored (invitable and type are params of
// Start Thread without Message). It returns the body, or a 400 Invalid Form Body answer.
func checkThreadBody(body []byte, ignored map[string]bool) (threadBody, int, any) {
	var fields map[string]json.RawMessage
	var b threadBody
	if json.Unmarshal(body, &fields) != nil || json.Unmarshal(body, &b) != nil {
		st, resp := errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return b, st, resp
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[f]
		switch f {
		case "name", "auto_archive_duration":
			if isNull(raw) {
				st, resp := invalidForm([]string{f}, "BASE_TYPE_BAD_TYPE", "This field cannot be null")
				return b, st, resp
			}
		case "rate_limit_per_user":
		default:
			if ignored[f] {
				continue
			}
			st, resp := invalidForm([]string{f}, "UNKNOWN_FIELD", "This field is not one the route takes")
			return b, st, resp
		}
	}
	if n := utf8.RuneCountInString(b.Name); n == 0 || n > 100 {
		st, resp := invalidForm([]string{"name"}, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		return b, st, resp
	}
	if d := b.AutoArchiveDuration; d != nil && !slices.Contains([]int{60, 1440, 4320, 10080}, *d) {
		st, resp := invalidForm([]string{"auto_archive_duration"}, "BASE_TYPE_CHOICES", "Value must be one of (60, 1440, 4320, 10080).")
		return b, st, resp
	}
	if r := b.RateLimitPerUser; r != nil && (*r < 0 || *r > 21600) {
		st, resp := invalidForm([]string{"rate_limit_per_user"}, "NUMBER_TYPE_MAX", "Must be between 0 and 21600.")
		return b, st, resp
	}
	return b, 0, nil
}

func (t *threads) postThread(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	t.st.mu.Lock()
	ignored := maps.Clone(t.ignored)
	t.st.mu.Unlock()
	b, st, resp := checkThreadBody(body, ignored)
	if st != 0 {
		return st, resp
	}
	chID, msgID := r.PathValue("channel"), r.PathValue("message")
	t.st.mu.Lock()
	parent, ok := t.chans.byID[chID]
	if !ok || parent.Type != ChannelText {
		t.st.mu.Unlock()
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	if m, ok := t.msgs.byID[msgID]; !ok || m.ChannelID != chID {
		t.st.mu.Unlock()
		return errorResp(http.StatusNotFound, 10008, "Unknown Message")
	}
	if _, exists := t.chans.byID[msgID]; exists {
		t.st.mu.Unlock()
		return errorResp(http.StatusBadRequest, 160004, "A thread has already been created for this message")
	}
	th := &Channel{ID: msgID, Type: ChannelPublicThread, GuildID: parent.GuildID, ParentID: chID, Name: b.Name}
	if b.AutoArchiveDuration != nil {
		th.AutoArchiveDuration = *b.AutoArchiveDuration
	}
	if b.RateLimitPerUser != nil {
		th.RateLimitPerUser = *b.RateLimitPerUser
	}
	t.chans.byID[msgID] = th
	w := th.wire()
	t.st.mu.Unlock()
	ev := th.wire()
	ev["newly_created"] = true
	t.gw.dispatch("THREAD_CREATE", ev)
	return http.StatusCreated, w
}
