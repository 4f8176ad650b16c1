package telegramfake

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// api is the Bot API (POST /bot<token>/<method>; GET /file/bot<token>/<path> goes to files):
// every call is counted, delayed while a test delays it, checked for conformance, failed when a
// fault is injected, else answered by its method's handler, then logged.
type api struct {
	mu        *sync.Mutex
	token     string
	log       *callLog
	faults    *faults
	conf      *conformance.Recorder
	files     *files
	updates   *updates
	documents *documents
	// methods are the handlers of the methods the fake implements (Server.botAPI) but getUpdates
	// and sendDocument, which need the request; they run with mu held.
	methods map[string]method
}

// method is a Bot API method's handler.
type method func(p map[string]string) (any, *apiError)

// apiError is an error answer.
type apiError struct {
	code       int
	desc       string
	retryAfter int
}

func badRequest(desc string) *apiError { return &apiError{code: 400, desc: "Bad Request: " + desc} }

func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		a.files.serveFile(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeError(w, &apiError{code: 404, desc: "Not Found"})
		return
	}
	if token != a.token {
		writeError(w, &apiError{code: 401, desc: "Unauthorized"})
		return
	}
	a.log.arrived(method)
	if !a.faults.wait(r.Context(), method) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest))
	if err != nil {
		writeError(w, badRequest("invalid request parameters"))
		return
	}
	a.conf.Check(method, r.Header.Get("Content-Type"), body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	params, err := readParams(r)
	if err != nil {
		writeError(w, badRequest("invalid request parameters"))
		return
	}
	if f := a.faults.take(method, params); f != nil {
		a.log.answered(method, params, f.code)
		writeError(w, f)
		return
	}
	result, aerr := a.call(r, method, params)
	status := 200
	if aerr != nil {
		status = aerr.code
	}
	a.log.answered(method, params, status)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeResult(w, result)
}

// call runs method's handler: getUpdates without the lock (it waits for updates), the others
// with it; a method the fake does not implement, or was told to find unsupported, is 404.
func (a *api) call(r *http.Request, method string, params map[string]string) (any, *apiError) {
	switch method {
	case "getUpdates":
		return a.updates.getUpdates(r, params)
	case "sendDocument":
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.documents.sendDocument(r, params)
	}
	gone := a.faults.unsupported(method)
	h, known := a.methods[method]
	if !known || gone {
		return nil, &apiError{code: 404, desc: "Not Found: method not found"}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return h(params)
}

// maxRequest bounds a request body (a document upload included).
const maxRequest = 64 << 20

// readParams reads the query string and a form, multipart or JSON body into one flat map; JSON
// values that are not strings keep their JSON text, as the Bot API accepts either.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		for k, raw := range m {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(raw)
			}
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	return out, nil
}

type envelope struct {
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *map[string]int `json:"parameters,omitempty"`
}

// verbatimArray is a result array whose elements are written byte for byte, valid JSON or not
// (encoding/json would refuse to write an invalid json.RawMessage).
type verbatimArray []json.RawMessage

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	if a, ok := result.(verbatimArray); ok {
		b := []byte(`{"ok":true,"result":[`)
		for i, raw := range a {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, raw...)
		}
		_, _ = w.Write(append(b, "]}\n"...))
		return
	}
	_ = json.NewEncoder(w).Encode(envelope{OK: true, Result: result})
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	env := envelope{ErrorCode: e.code, Description: e.desc}
	if e.retryAfter > 0 {
		p := map[string]int{"retry_after": e.retryAfter}
		env.Parameters = &p
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(env)
}

func getMe(map[string]string) (any, *apiError) {
	return User{ID: BotID, IsBot: true, FirstName: BotName, Username: BotUsername}, nil
}
