package discordfake

import (
	"net/http"
	"time"
)

// webhooks are an interaction's webhook: follow-up messages (POST /webhooks/{app}/{token}) and
// edits and deletions of the original response and the follow-ups, authorized by the
// interaction's token for TokenLifetime.
type webhooks struct {
	st  *store
	ixs *interactions
}

func (wh *webhooks) tokenLocked(r *http.Request) (*Interaction, int, any) {
	ix, ok := wh.ixs.byToken[r.PathValue("token")]
	if !ok || r.PathValue("app") != ApplicationID || time.Since(ix.CreatedAt) > TokenLifetime {
		st, resp := errorResp(http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return nil, st, resp
	}
	if len(ix.Responses) == 0 {
		st, resp := errorResp(http.StatusNotFound, 10015, "Unknown Webhook")
		return nil, st, resp
	}
	return ix, 0, nil
}

func (wh *webhooks) postFollowup(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	mb, ok := decodeMessageBody(body)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if st, resp := mb.check(nil, true); st != 0 {
		return st, resp
	}
	wh.st.mu.Lock()
	defer wh.st.mu.Unlock()
	ix, st, resp := wh.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := wh.ixs.responseMessageLocked(ix, &mb)
	ix.Followups = append(ix.Followups, m)
	if r.URL.Query().Get("wait") == "false" {
		return http.StatusNoContent, nil
	}
	return http.StatusOK, m.wire()
}

func (wh *webhooks) followupTargetLocked(ix *Interaction, id string) *Message {
	if id == "@original" {
		return ix.Original
	}
	for _, m := range ix.Followups {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (wh *webhooks) patchFollowup(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	mb, ok := decodeMessageBody(body)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	wh.st.mu.Lock()
	defer wh.st.mu.Unlock()
	ix, st, resp := wh.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := wh.followupTargetLocked(ix, r.PathValue("message"))
	if m == nil || m.Deleted {
		return errorResp(http.StatusNotFound, 10008, "Unknown Message")
	}
	if st, resp := mb.check(m, false); st != 0 {
		return st, resp
	}
	mb.apply(m)
	m.Pending = false
	m.Edits++
	return http.StatusOK, m.wire()
}

func (wh *webhooks) deleteFollowup(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	wh.st.mu.Lock()
	defer wh.st.mu.Unlock()
	ix, st, resp := wh.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := wh.followupTargetLocked(ix, r.PathValue("message"))
	if m == nil || m.Deleted {
		return errorResp(http.StatusNotFound, 10008, "Unknown Message")
	}
	m.Deleted = true
	return http.StatusNoContent, nil
}
