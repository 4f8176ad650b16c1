package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// api is the Web API (POST /api/<method>): every call is counted, held while a test holds it,
// checked for conformance, authenticated, failed when a fault is injected, else answered by its
// method's handler, then logged. auth.test and apps.connections.open are its own methods.
type api struct {
	st       *store
	log      *callLog
	faults   *faults
	oauth    *oauth
	conf     *conformance.Recorder
	appToken string
	url      func() string // the server's base URL
	// methods are the handlers of the Web API methods the fake implements (Server.webAPI).
	methods map[string]method
}

// method is a Web API method's handler; it runs with st.mu held. team is the workspace whose bot
// token made the call ("" for the app token).
type method func(p map[string]string, team string) (map[string]any, *apiErr)

// apiErr is an ok:false answer (status 200) or an HTTP error (status ≠ 200).
type apiErr struct {
	status     int
	err        string
	retryAfter int
}

func slackErr(e string) *apiErr { return &apiErr{status: 200, err: e} }

// tokenKind says which token a method needs.
func tokenKind(method string) string {
	if method == "apps.connections.open" {
		return "app"
	}
	return "bot"
}

func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	a.log.arrived(method)
	a.faults.wait(method)
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		a.answer(w, method, nil, "", "", nil, slackErr("invalid_form_data"))
		return
	}
	a.conf.Check(method, r.Header.Get("Content-Type"), body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	params, token, auth, err := readParams(r)
	if err != nil {
		a.answer(w, method, params, auth, "", nil, slackErr("invalid_form_data"))
		return
	}
	if method == "oauth.v2.access" {
		a.exchange(w, method, params, auth)
		return
	}
	team, aerr := a.authenticate(method, token)
	if aerr != nil {
		a.answer(w, method, params, auth, "", nil, aerr)
		return
	}
	if f := a.faults.take(method, params); f != nil {
		a.answer(w, method, params, auth, team, nil, f)
		return
	}
	h, ok := a.methods[method]
	if !ok {
		a.answer(w, method, params, auth, team, nil, slackErr("unknown_method"))
		return
	}
	a.st.mu.Lock()
	res, aerr := h(params, team)
	a.st.mu.Unlock()
	a.answer(w, method, params, auth, team, res, aerr)
}

// authenticate checks a call's token — the app token for apps.connections.open, a bot token of
// a workspace for the others — and returns that workspace.
func (a *api) authenticate(method, token string) (team string, e *apiErr) {
	if token == "" {
		return "", slackErr("not_authed")
	}
	if tokenKind(method) == "app" {
		if token != a.appToken {
			return "", slackErr("invalid_auth")
		}
		return "", nil
	}
	a.st.mu.Lock()
	team, ok := a.oauth.teamLocked(token)
	a.st.mu.Unlock()
	if !ok {
		return "", slackErr("invalid_auth")
	}
	return team, nil
}

// exchange answers oauth.v2.access, which takes the app's client credentials, not a token; the
// secrets it carries are logged redacted.
func (a *api) exchange(w http.ResponseWriter, method string, params map[string]string, auth string) {
	if f := a.faults.take(method, params); f != nil {
		a.answer(w, method, redactOAuth(params), auth, "", nil, f)
		return
	}
	a.st.mu.Lock()
	res, aerr := a.oauth.access(params)
	a.st.mu.Unlock()
	a.answer(w, method, redactOAuth(params), auth, "", res, aerr)
}

// answer logs the call and writes res, or e: a 429 with Retry-After, another HTTP error with an
// HTML body, or {"ok":false,"error":…}.
func (a *api) answer(w http.ResponseWriter, method string, params map[string]string, auth, team string, res map[string]any, e *apiErr) {
	status, errText := http.StatusOK, ""
	if e != nil {
		status, errText = e.status, e.err
	}
	a.log.answered(Call{Method: method, Params: params, Auth: auth, Team: team, Status: status, Error: errText, At: time.Now()})
	if e != nil && e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
		w.WriteHeader(e.status)
		return
	}
	if e != nil && e.status != http.StatusOK {
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, "<html>error</html>")
		return
	}
	if res == nil {
		res = map[string]any{}
	}
	if e != nil {
		res = map[string]any{"ok": false, "error": e.err}
	} else {
		res["ok"] = true
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(res)
}

// authTest is auth.test: who the token is, in which workspace.
func (a *api) authTest(_ map[string]string, team string) (map[string]any, *apiErr) {
	return map[string]any{"url": "https://fake.slack.test/", "team": TeamName, "user": "switchboard",
		"team_id": team, "user_id": BotUserID, "bot_id": BotID}, nil
}

// connectionsOpen is apps.connections.open: the URL of a Socket Mode socket.
func (a *api) connectionsOpen(map[string]string, string) (map[string]any, *apiErr) {
	u := "ws" + strings.TrimPrefix(a.url(), "http") + "/socket?ticket=" + fmt.Sprint(a.st.nextLocked())
	return map[string]any{"url": u}, nil
}

// maxBody bounds a request body.
const maxBody = 4 << 20

// readParams reads a form or JSON body (and the query string) into strings, and the token from
// the Authorization header or the form; the token is removed from the parameters.
func readParams(r *http.Request) (params map[string]string, token, auth string, err error) {
	params = map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return params, "", "", err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json":
		var m map[string]json.RawMessage
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				return params, "", "", err
			}
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params[k] = str
			} else {
				params[k] = string(v)
			}
		}
	case len(body) > 0:
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return params, "", "", err
		}
		for k, v := range vals {
			params[k] = v[0]
		}
	}
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h != "" {
		token, auth = h, "bearer"
	}
	if t := params["token"]; t != "" {
		if token == "" {
			token, auth = t, "form"
		}
		delete(params, "token")
	}
	return params, token, auth, nil
}
