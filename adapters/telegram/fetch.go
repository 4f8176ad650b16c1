package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

var _ channels.FileFetcher = (*Channel)(nil)

// MaxDownloadBytes is the largest file the Bot API lets a bot download: getFile refuses a
// larger one ("file is too big").
const MaxDownloadBytes = 20 << 20

// fetcher downloads the files users send (FetchFile).
type fetcher struct {
	cfg *Config
	api *botAPI
}

// FetchFile downloads a file a user sent, named by the telegram-file:<file_id> reference its
// Inbound carries in a.URL (see attachments): getFile, a Bot API call with its error mapping
// and retries, gives the file's path, and the bytes come from
// <api url>/file/bot<token>/<file_path> (kit.FileDownload, on the API URL's host only). A file
// larger than limit fails with an error wrapping conv.ErrFileTooLarge: before any call when
// the update stated its size, before the download when getFile does, else once more than
// limit bytes came; so does one Telegram refuses to serve a bot (over MaxDownloadBytes). The
// download URL holds the token: no error or log line does. k is not needed, a file id serves
// the whole bot.
func (f *fetcher) FetchFile(ctx context.Context, _ conv.Key, a conv.Attachment, limit int64) ([]byte, error) {
	id, ok := strings.CutPrefix(a.URL, fileRefPrefix)
	if !ok || id == "" {
		return nil, errors.New("telegram: fetch file: the attachment is not a Telegram file")
	}
	if err := kit.CheckSize(a.Size, limit); err != nil {
		return nil, fmt.Errorf("telegram: %w", err) // before getFile
	}
	raw, err := f.api.callWaiting(ctx, "getFile", tgbotapi.Params{"file_id": id}, true)
	if err != nil {
		return nil, err
	}
	file, err := decodeFile(raw)
	if err != nil {
		return nil, fmt.Errorf("telegram: getFile: %w", err)
	}
	dl := kit.FileDownload{Client: f.cfg.HTTPClient, Origins: []string{f.cfg.APIURL}}
	got, err := dl.Get(ctx, f.cfg.APIURL+"/file/bot"+f.cfg.Token+"/"+file.path, file.size, limit)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", f.api.redact.Error(err))
	}
	return got.Data, nil
}

// botFile is the File object getFile answers with, as FetchFile reads it.
type botFile struct {
	id   string
	size int64 // 0 when Telegram did not say
	path string
}

// errMalformedFile is wrapped by decodeFile's errors.
var errMalformedFile = errors.New("the result is not a File this adapter can download")

// maxFilePath bounds a file_path (Telegram's are a few dozen characters).
const maxFilePath = 512

// decodeFile reads getFile's result: a File object whose file_path is relative and made of
// segments of letters, digits, '.', '_' and '-' other than "." and ".." (Telegram's look like
// "documents/file_3.pdf"), so that it names a file under /file/bot<token>/ and nothing else,
// and whose file_size, when present, is not negative.
func decodeFile(raw []byte) (botFile, error) {
	var w struct {
		FileID   string `json:"file_id"`
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return botFile{}, fmt.Errorf("%w: %v", errMalformedFile, err)
	}
	switch {
	case w.FilePath == "":
		return botFile{}, fmt.Errorf("%w: no file_path", errMalformedFile)
	case strings.HasPrefix(w.FilePath, "/"):
		// A local Bot API server in --local mode names the file on its own disk, and serves
		// no download.
		return botFile{}, fmt.Errorf("%w: an absolute file_path (a local Bot API server's disk)", errMalformedFile)
	case !safeFilePath(w.FilePath):
		return botFile{}, fmt.Errorf("%w: a file_path with characters Telegram's never have", errMalformedFile)
	case w.FileSize < 0:
		return botFile{}, fmt.Errorf("%w: a negative file_size", errMalformedFile)
	}
	return botFile{id: w.FileID, size: w.FileSize, path: w.FilePath}, nil
}

// safeFilePath reports whether p is a relative path of segments of [A-Za-z0-9._-], none empty,
// "." or "..", at most maxFilePath bytes: it needs no escaping in a URL and cannot climb out of
// the directory it is joined to.
func safeFilePath(p string) bool {
	if len(p) == 0 || len(p) > maxFilePath {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for i := 0; i < len(seg); i++ {
			b := seg[i]
			if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-') {
				return false
			}
		}
	}
	return true
}
