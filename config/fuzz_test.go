package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// FuzzLoadYAML: whatever the file holds, Load does not panic and returns either a config or an
// error; a config it returns validates without panicking and prints as YAML that loads again;
// every problem it reports names a key.
//
//	go test ./config -run '^$' -fuzz FuzzLoadYAML -fuzztime 60s
func FuzzLoadYAML(f *testing.F) {
	full, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(full),
		"",
		"~\n",
		"runs: {workers: 2, lease: 1m}\n",
		"runs: {lease: 30}\n",
		"telegram: {token: x, token_file: y}\n",
		"access: {telegram: {allow: 'a, b,,c'}}\n",
		"access: {irc: {}}\n",
		"a: &a [*a]\n",
		"? [a]\n: b\n",
		"telegram.token: dotted\n",
		"runs: {workers: 1e30}\n",
		"llm: {provider: ~, base_url: 'http://u:p@h'}\n",
		"redis: {url: 'redis://:p@h:1', addrs: a}\n",
		"- 1\n- 2\n",
		"\t",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, nil)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Load returned cfg=%v err=%v: want exactly one", cfg != nil, err)
		}
		if err != nil {
			var ve *config.ValidationError
			if errors.As(err, &ve) {
				for _, p := range ve.Problems {
					if p.Key == "" || p.Message == "" {
						t.Fatalf("problem without key or message: %+v", p)
					}
				}
			}
			return
		}
		_ = cfg.Validate()
		_ = cfg.Enabled()
		printed := filepath.Join(dir, "printed.yaml")
		if err := os.WriteFile(printed, []byte(cfg.Redacted()), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(printed, nil); err != nil {
			t.Fatalf("Redacted() output does not load: %v\n%s", err, cfg.Redacted())
		}
	})
}
