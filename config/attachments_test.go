package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// TestAttachmentsFromFileAndEnvironment: attachments.* load from the file and from BOT_ATTACHMENTS__*
// like any scalar key, the environment over the file, and what is left unset keeps its default.
func TestAttachmentsFromFileAndEnvironment(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", "attachments:\n  download: false\n  max_files: 4\n  max_text_chars: 500\n")
	cfg := mustLoad(t, path, []string{
		"BOT_ATTACHMENTS__DOWNLOAD=true",
		"BOT_ATTACHMENTS__MAX_BYTES=1048576",
		"BOT_ATTACHMENTS__MAX_FILES=7",
	})
	want := config.Attachments{Download: true, MaxBytes: 1 << 20, MaxTextChars: 500, MaxFiles: 7}
	if cfg.Attachments != want {
		t.Errorf("attachments = %+v, want %+v", cfg.Attachments, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	cfg = mustLoad(t, path, nil)
	want = config.Attachments{Download: false, MaxBytes: config.DefaultAttachmentMaxBytes, MaxTextChars: 500, MaxFiles: 4}
	if cfg.Attachments != want {
		t.Errorf("from the file alone: attachments = %+v, want %+v", cfg.Attachments, want)
	}

	envs := map[string]string{}
	for _, s := range config.Reference() {
		for _, k := range s.Keys {
			if s.Name == "attachments" {
				envs[k.Key] = k.Env + " " + k.Type
			}
		}
	}
	for key, want := range map[string]string{
		"attachments.download":       "BOT_ATTACHMENTS__DOWNLOAD boolean",
		"attachments.max_bytes":      "BOT_ATTACHMENTS__MAX_BYTES integer",
		"attachments.max_text_chars": "BOT_ATTACHMENTS__MAX_TEXT_CHARS integer",
		"attachments.max_files":      "BOT_ATTACHMENTS__MAX_FILES integer",
	} {
		if envs[key] != want {
			t.Errorf("the reference lists %s as %q, want %q", key, envs[key], want)
		}
	}
}

// TestAttachmentsLimitsAcceptTheirBounds: each limit accepts its lowest and highest value.
func TestAttachmentsLimitsAcceptTheirBounds(t *testing.T) {
	for _, a := range []config.Attachments{
		{MaxBytes: 1, MaxTextChars: 1, MaxFiles: 1},
		{Download: true, MaxBytes: 100 << 20, MaxTextChars: 1_000_000, MaxFiles: 100},
	} {
		c := config.Default()
		c.Attachments = a
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
}

// TestAttachmentsRejectMalformedValues: a negative, zero, too large or mistyped attachments.*
// value, in the file or the environment, is refused by Load (the type) or Validate (the range)
// with a problem at that key, and nothing else.
func TestAttachmentsRejectMalformedValues(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string // written to a file when non-empty
		env     []string
		key     string // the one key with a problem
		wantMsg string // a substring of the error
	}{
		{"max_bytes negative", "attachments: {max_bytes: -1}\n", nil, "attachments.max_bytes", "must be from 1 to 104857600 bytes (100 MiB), got -1"},
		{"max_bytes zero", "", []string{"BOT_ATTACHMENTS__MAX_BYTES=0"}, "attachments.max_bytes", "got 0"},
		{"max_bytes over 100 MiB", "attachments: {max_bytes: 104857601}\n", nil, "attachments.max_bytes", "got 104857601"},
		{"max_bytes with a unit", "attachments: {max_bytes: 20MB}\n", nil, "attachments.max_bytes", `expected a whole number, got "20MB"`},
		{"max_bytes in exponent form", "", []string{"BOT_ATTACHMENTS__MAX_BYTES=1e6"}, "attachments.max_bytes", `expected a whole number, got "1e6"`},
		{"max_bytes a list", "attachments: {max_bytes: [1]}\n", nil, "attachments.max_bytes", "expected a whole number, got a list"},
		{"max_text_chars negative", "", []string{"BOT_ATTACHMENTS__MAX_TEXT_CHARS=-5"}, "attachments.max_text_chars", "must be from 1 to 1000000 characters, got -5"},
		{"max_text_chars zero", "attachments: {max_text_chars: 0}\n", nil, "attachments.max_text_chars", "got 0"},
		{"max_text_chars over the cap", "attachments: {max_text_chars: 1000001}\n", nil, "attachments.max_text_chars", "got 1000001"},
		{"max_text_chars a word", "", []string{"BOT_ATTACHMENTS__MAX_TEXT_CHARS=lots"}, "attachments.max_text_chars", `expected a whole number, got "lots"`},
		{"max_files negative", "attachments: {max_files: -3}\n", nil, "attachments.max_files", "must be from 1 to 100 files, got -3"},
		{"max_files zero", "", []string{"BOT_ATTACHMENTS__MAX_FILES=0"}, "attachments.max_files", "got 0"},
		{"max_files over 100", "attachments: {max_files: 101}\n", nil, "attachments.max_files", "got 101"},
		{"max_files a mapping", "attachments: {max_files: {a: 1}}\n", nil, "attachments.max_files", "expected a whole number, got a mapping"},
		{"download not a boolean", "attachments: {download: maybe}\n", nil, "attachments.download", `expected true or false, got "maybe"`},
		{"download not a boolean in env", "", []string{"BOT_ATTACHMENTS__DOWNLOAD=yes please"}, "attachments.download", "expected true or false"},
		{"the section a scalar", "attachments: 5\n", nil, "attachments", "is a section"},
		{"an unknown key", "attachments: {max_size: 5}\n", nil, "attachments.max_size", "unknown key"},
		{"a section in env", "", []string{"BOT_ATTACHMENTS=1"}, "attachments", "is a section, not a key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			}
			cfg, err := config.Load(path, tt.env)
			if err == nil {
				err = cfg.Validate()
			}
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load and Validate = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != 1 || ve.Problems[0].Key != tt.key {
				t.Errorf("problems %v, want one at %s", ve.Problems, tt.key)
			}
			if msg := ve.Error(); !strings.Contains(msg, tt.key+": ") || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("error %q does not name %s with %q", msg, tt.key, tt.wantMsg)
			}
		})
	}
}
