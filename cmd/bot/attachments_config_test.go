package main

import (
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/attach"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// TestAttachmentsConfigDefaultsAreAttachs: config writes core/attach's defaults again (it
// imports no core package); the two must stay the same numbers, so that an unset
// attachments.* key means what core/attach means by its default.
func TestAttachmentsConfigDefaultsAreAttachs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		config, core int64
	}{
		{"max_bytes", config.DefaultAttachmentMaxBytes, attach.DefaultMaxBytes},
		{"max_text_chars", config.DefaultAttachmentMaxTextChars, attach.DefaultMaxTextChars},
		{"max_files", config.DefaultAttachmentMaxFiles, attach.DefaultMaxFiles},
	} {
		if c.config != c.core {
			t.Errorf("attachments.%s defaults to %d in config, attach's default is %d", c.name, c.config, c.core)
		}
	}
	d := config.Default().Attachments
	if !d.Download || d.MaxBytes != attach.DefaultMaxBytes || d.MaxTextChars != attach.DefaultMaxTextChars || d.MaxFiles != attach.DefaultMaxFiles {
		t.Errorf("config.Default().Attachments = %+v, want downloads on and attach's defaults", d)
	}
}

// TestFileOptionsFollowAttachmentsConfig: the team reads files within attachments.*, and
// downloads none when attachments.download is false.
func TestFileOptionsFollowAttachmentsConfig(t *testing.T) {
	t.Parallel()
	fetched := 0
	hooks := coreHooks{fetch: func(context.Context, conv.Key, conv.Attachment, int64) ([]byte, error) {
		fetched++
		return []byte("x"), nil
	}}

	cfg := config.Default()
	cfg.Attachments = config.Attachments{Download: true, MaxBytes: 3 << 20, MaxTextChars: 1234, MaxFiles: 5}
	f, err := (&core{}).fileOptions(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if f.MaxBytes != 3<<20 || f.MaxTextChars != 1234 || f.MaxFiles != 5 {
		t.Errorf("bounds %d bytes, %d characters, %d files; want attachments.*'s 3 MiB, 1234, 5", f.MaxBytes, f.MaxTextChars, f.MaxFiles)
	}
	if f.Fetch == nil {
		t.Fatal("download on, but no Fetch")
	}
	if _, err := f.Fetch(context.Background(), conv.Key{Platform: "telegram", Chat: "1"}, conv.Attachment{Name: "a.txt"}, 10); err != nil || fetched != 1 {
		t.Errorf("Fetch did not go to the channels' fetcher: err %v, %d fetches", err, fetched)
	}

	cfg.Attachments.Download = false
	f, err = (&core{}).fileOptions(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if f.Fetch != nil {
		t.Error("attachments.download false, but the team may still download files")
	}
	if f.MaxBytes != 3<<20 || f.MaxTextChars != 1234 || f.MaxFiles != 5 {
		t.Errorf("download off changed the bounds: %+v", f)
	}
}
