package telegramfake

import "github.com/switchboard-bot/switchboard/internal/conformance"

// ParseHTML checks s the way the Bot API checks text sent with parse_mode HTML and returns the
// visible text (conformance.TelegramHTML).
func ParseHTML(s string) (string, error) { return conformance.TelegramHTML(s) }

// utf16Len is the length the Bot API counts: UTF-16 code units.
func utf16Len(s string) int { return conformance.UTF16Len(s) }
