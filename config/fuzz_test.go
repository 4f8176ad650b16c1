package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// FuzzLoadYAML: whatever the file holds, Load does not panic and returns either a config or an
// error; a config it returns validates without panicking and prints as YAML that loads again;
// every problem it reports names a key; profiles and routes print back as they were.
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
		"llm: {vision: true, providers: {local: {base_url: 'http://h/v1', api_key: k, model: m, timeout: 1m, max_retries: 0}}, transcription: {provider: local, model: w}}\n",
		"llm: {providers: {a: {base_url: 'http://u:p@h', api_key_file: key, timeout: 30}, b: ~, c: [x]}}\n",
		"profiles: {support: {system_prompt: s, model: m, provider: p, models: [m], tools: ['t__*'], vision: false, history_turns: 2, subagents: {max_depth: 0, max_concurrent: 1}}, none: {tools: []}, nil: ~}\n",
		"profiles: {a: {tools: '', subagents: {}, vision: ~}, default: {}, 'a.b': {model: x}}\n",
		"routes: [{match: {platform: slack, team: T1, enterprise: E1, channel: C1, dm: true, user: 'T1:U1'}, profile: a}, {match: {}, profile: default}]\n",
		"routes: [{match: {guild: 112233445566778899, channel: 1.5e3, user: true}, profile: 7}, {match: ~}, ~, x]\n",
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
		again, err := config.Load(printed, nil)
		if err != nil {
			t.Fatalf("Redacted() output does not load: %v\n%s", err, cfg.Redacted())
		}
		// Nothing in profiles and routes is secret: they print exactly.
		if !reflect.DeepEqual(again.Profiles, cfg.Profiles) || !reflect.DeepEqual(again.Routes, cfg.Routes) {
			t.Fatalf("profiles or routes changed through Redacted():\n%#v %#v\nvs\n%#v %#v", cfg.Profiles, cfg.Routes, again.Profiles, again.Routes)
		}
	})
}
