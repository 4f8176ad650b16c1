package telegram

import (
	"encoding/json"
	"errors"
	"fmt"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// answer is the envelope of a Bot API answer: {"ok", "result", "error_code", "description",
// "parameters"}, as json.Unmarshal reads it into the library's tgbotapi.APIResponse.
type answer struct {
	ok          bool
	result      []byte // the raw value; nil when there is none
	code        int
	description string
	params      *tgbotapi.ResponseParameters
}

// errNotAnswer is a body that is not a Bot API answer (not JSON, or fields of the wrong type).
var errNotAnswer = errors.New("the body is not a Bot API answer")

// decodeAnswer reads the answer that is the whole of b (whitespace around it allowed).
func decodeAnswer(b []byte) (answer, error) {
	var w struct {
		OK          bool                         `json:"ok"`
		Result      json.RawMessage              `json:"result"`
		Code        int                          `json:"error_code"`
		Description string                       `json:"description"`
		Params      *tgbotapi.ResponseParameters `json:"parameters"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return answer{}, fmt.Errorf("%w: %v", errNotAnswer, err)
	}
	return answer{ok: w.OK, result: w.Result, code: w.Code, description: w.Description, params: w.Params}, nil
}
