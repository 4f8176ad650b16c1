package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
)

var (
	_ channels.FileSender = (*Channel)(nil)
	_ channels.Pager      = (*Channel)(nil)
)

// MaxCaption is the longest document caption Telegram accepts; SendFile cuts longer ones.
const MaxCaption = 1024

// Pages reports how many Telegram messages Send would post for m (4,096 characters shown each).
// A card's rendering is kept for its Send or Edit (kit.Pages).
func (s *sender) Pages(m channels.Message) (int, error) { return s.pages.Count(m) }

// SendFile posts data as a document named name (sendDocument, a multipart upload) to the
// conversation's chat and forum topic, with caption as its plain-text caption (cut to 1,024
// characters), paced like messages. The ref names the one message sent.
func (s *sender) SendFile(ctx context.Context, to channels.Target, f channels.File) (channels.MessageRef, error) {
	name, data, caption := f.Name, f.Data, f.Caption
	ref := channels.MessageRef{Conv: to.Conv}
	chat, err := chatID(to.Conv)
	if err != nil {
		return ref, err
	}
	if len(data) == 0 {
		return ref, errors.New("telegram: send file: empty file")
	}
	if err := s.pace(ctx, chat); err != nil {
		return ref, fmt.Errorf("telegram: send file: %w", err)
	}
	params := tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10)}
	if caption != "" {
		params["caption"] = cutCaption(caption)
	}
	if to.Conv.Thread != "" {
		params["message_thread_id"] = to.Conv.Thread
	}
	if _, err := strconv.Atoi(to.ReplyTo); err == nil {
		params["reply_parameters"] = `{"message_id":` + to.ReplyTo + `,"allow_sending_without_reply":true}`
	}
	files := []tgbotapi.RequestFile{{Name: "document", Data: tgbotapi.FileBytes{Name: name, Bytes: data}}}
	raw, err := s.api.upload(ctx, "sendDocument", params, files, false)
	if err != nil {
		return ref, err
	}
	id := sentMessageID(raw)
	if id == 0 {
		return ref, errors.New("telegram: sendDocument: unreadable result")
	}
	ref.IDs = []string{strconv.Itoa(id)}
	return ref, nil
}

// cutCaption cuts s to MaxCaption UTF-16 code units (as Telegram counts), ending it with "…"
// when it had to cut.
func cutCaption(s string) string {
	if len(utf16.Encode([]rune(s))) <= MaxCaption {
		return s
	}
	n := 0
	for i, r := range s {
		n += max(utf16.RuneLen(r), 1)
		if n > MaxCaption-1 {
			return s[:i] + "…"
		}
	}
	return s
}
