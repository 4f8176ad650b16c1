package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// entry is one element of a getUpdates answer, before it is decoded as an update.
type entry struct {
	// raw is the element's JSON; nil for an element the answer breaks off in.
	raw json.RawMessage
	// id is the element's update_id, 0 when it cannot be read; set by handleBatch, which reads
	// it from the decoded update, and with readUpdateID only when the update is malformed.
	id int64
	// floor is, for an element whose id cannot be read, the least id it can have (see
	// floorIDs); 0 when nothing bounds it.
	floor int64
}

// maxAnswerBytes bounds an answer read (readAnswer): 100 updates are far smaller. A larger one
// is refused, not cut: an answer cut inside its first update would have that update skipped.
const maxAnswerBytes = 32 << 20

// fetchUpdates makes one getUpdates call and returns its answer element by element, so that one
// bad element costs only itself: a 200 answer that is not valid JSON (which decodeAnswer refuses
// whole) is read up to where it breaks (see splitBatch). Errors are the call's, or an answer with
// no readable array of updates.
func (p *poller) fetchUpdates(ctx context.Context, params tgbotapi.Params) ([]entry, error) {
	status, body, err := p.api.post(ctx, "getUpdates", params)
	if err != nil {
		return nil, err
	}
	res, err := p.api.result(ctx, "getUpdates", status, body)
	if err == nil {
		entries, ok := splitResult(res)
		if !ok {
			return nil, fmt.Errorf("telegram: getUpdates: the result is not an array of updates")
		}
		return entries, nil
	}
	var ae *APIError
	if errors.As(err, &ae) || ctx.Err() != nil || status != http.StatusOK {
		return nil, err
	}
	// A 200 answer that is not valid JSON: keep what can be read of it.
	entries, ok := salvageBatch(body)
	if !ok {
		return nil, err
	}
	read := 0
	for _, e := range entries {
		if e.raw != nil {
			read++
		}
	}
	p.cfg.Logger.Warn("telegram: getUpdates answered invalid JSON; reading the updates before the break",
		"bytes", len(body), "updates_read", read, "err", p.api.redact.Error(err))
	return entries, nil
}

// splitResult splits the result of a getUpdates answer, which decodeAnswer found to be valid
// JSON, into its elements. ok is false when it is not an array.
func splitResult(res []byte) (entries []entry, ok bool) {
	var raws []json.RawMessage
	if json.Unmarshal(res, &raws) != nil {
		return nil, false
	}
	if raws == nil {
		return nil, true // null, as json.Unmarshal reads it: no updates
	}
	entries = make([]entry, len(raws))
	for i, r := range raws {
		entries[i].raw = r
	}
	return entries, true
}

// splitBatch reads a JSON array from dec element by element. complete is false when dec does
// not hold a whole array: the elements before the break are returned. The element the array
// breaks off in is returned too, with no raw, when it is the first: then nothing else would move
// the offset past it. After readable elements it is left out, for the next poll to fetch first
// (an answer cut short breaks elsewhere then) or, if it breaks there again, to skip.
func splitBatch(dec *json.Decoder) (entries []entry, complete bool) {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if len(entries) == 0 {
				entries = []entry{{}}
			}
			return entries, false
		}
		entries = append(entries, entry{raw: raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return entries, false
	}
	return entries, true
}

// salvageBatch reads the updates of a getUpdates answer that is not valid JSON: it walks the
// envelope to its "result" array and splits that up to where it breaks. ok is false when the
// answer holds no result array to read, or says ok:false.
func salvageBatch(body []byte) (entries []entry, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		switch key {
		case "result":
			entries, _ = splitBatch(dec)
			return entries, len(entries) > 0
		case "ok":
			if v, err := dec.Token(); err != nil || v != true {
				return nil, false
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, false
			}
		}
	}
	return nil, false
}

// updateHead is the part of an update readUpdateID reads; a null update_id is kept as the
// bytes null.
type updateHead struct {
	UpdateID json.RawMessage `json:"update_id"`
}

// readUpdateID reads the update_id of one element: a positive integer, written as a JSON number
// or a string of digits. It returns 0 when there is none to read.
func readUpdateID(raw json.RawMessage) int64 {
	var h updateHead
	if json.Unmarshal(raw, &h) != nil {
		return 0
	}
	return parseUpdateID(h.UpdateID)
}

// parseUpdateID is the id an update_id's JSON value holds, 0 for none.
func parseUpdateID(v []byte) int64 {
	if len(v) == 0 {
		return 0
	}
	text := string(v)
	if v[0] == '"' {
		if json.Unmarshal(v, &text) != nil {
			return 0
		}
	}
	id, err := strconv.ParseInt(text, 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// floorIDs gives each element whose id cannot be read the least id it can have. Telegram
// numbers updates in sequence and answers them in ascending order from the offset asked for, so
// an element's id is at least one more than the previous element's (read, or itself a floor), and
// the first element's at least offset. Before the first read id of an answer polled with no
// offset nothing bounds it. A floor is exact while ids run in sequence (always, but after a week
// without updates, when Telegram picks the next id at random), and never above the element's
// true id: an offset past a floor passes the element, or falls short of it, but never passes a
// later update.
func floorIDs(entries []entry, offset int64) {
	// prev is the least id the previous element can have, when known.
	prev, known := offset-1, offset > 0
	for i := range entries {
		e := &entries[i]
		switch {
		case e.id > 0:
			prev, known = e.id, true
		case known:
			e.floor = prev + 1
			prev = e.floor
		}
	}
}
