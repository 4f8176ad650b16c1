package config_test

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// TestToolsConfigMalformed: every malformed tools setting is refused with the key at fault,
// and no message quotes an env or header value.
func TestToolsConfigMalformed(t *testing.T) {
	cases := []struct {
		name, yaml, key string
	}{
		{"servers not a mapping", "tools:\n  servers: [a, b]\n", "tools.servers"},
		{"server not a mapping", "tools:\n  servers:\n    a: text\n", "tools.servers.a"},
		{"unknown server key", "tools:\n  servers:\n    a: {command: [x], comand: [y]}\n", "tools.servers.a.comand"},
		{"env not a mapping", "tools:\n  servers:\n    a: {command: [x], env: S3CRET-env}\n", "tools.servers.a.env"},
		{"policy not a list", "tools:\n  policy: {tools: [x]}\n", "tools.policy"},
		{"rule unknown key", "tools:\n  policy:\n    - {tools: [a__b], alow: everyone}\n", "tools.policy[0].alow"},
		{"bad server name", "tools:\n  servers:\n    a__b: {command: [x]}\n", "tools.servers.a__b"},
		{"neither command nor url", "tools:\n  servers:\n    a: {include: [x]}\n", "tools.servers.a"},
		{"both command and url", "tools:\n  servers:\n    a: {command: [x], url: 'http://h/mcp'}\n", "tools.servers.a"},
		{"empty program", "tools:\n  servers:\n    a: {command: ['']}\n", "tools.servers.a.command"},
		{"url scheme", "tools:\n  servers:\n    a: {url: 'ftp://h/mcp'}\n", "tools.servers.a.url"},
		{"headers on stdio", "tools:\n  servers:\n    a: {command: [x], headers: {A: S3CRET-h}}\n", "tools.servers.a.headers"},
		{"env on http", "tools:\n  servers:\n    a: {url: 'http://h/mcp', env: {A: S3CRET-e}}\n", "tools.servers.a.env"},
		{"header twice", "tools:\n  servers:\n    a: {url: 'http://h/mcp', headers: {A: S3CRET-x}, headers_file: {A: /f}}\n", "tools.servers.a.headers_file"},
		{"bad glob", "tools:\n  servers:\n    a: {command: [x], include: ['[']}\n", "tools.servers.a.include"},
		{"rule without tools", "tools:\n  policy:\n    - {allow: everyone}\n", "tools.policy[0].tools"},
		{"bad approval", "tools:\n  policy:\n    - {tools: [a__b], approval: sometimes}\n", "tools.policy[0].approval"},
		{"inherit in a list", "tools:\n  subagents: [inherit, a__b]\n", "tools.subagents"},
		{"ttl zero", "tools:\n  approval_ttl: 0s\n", "tools.approval_ttl"},
		{"result cap", "tools:\n  max_result_bytes: 10\n", "tools.max_result_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "c.yaml", tc.yaml)
			cfg, err := config.Load(path, nil)
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.yaml)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error does not name %s: %v", tc.key, err)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("error quotes a secret: %v", err)
			}
		})
	}
}

// TestToolsSecretFilesAreRelativeToTheConfigFile: headers_file and env_file paths are read
// relative to the configuration file's folder, as every other _file key is.
func TestToolsSecretFilesAreRelativeToTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.yaml", "tools:\n  servers:\n    a: {url: 'http://h/mcp', headers_file: {Authorization: secrets/auth}}\n    b: {command: [x], env_file: {TOKEN: /abs/token}}\n")
	cfg := mustLoad(t, path, nil)
	if got, want := cfg.Tools.Servers["a"].HeadersFile["Authorization"], dir+"/secrets/auth"; got != want {
		t.Errorf("headers_file = %q, want %q", got, want)
	}
	if got := cfg.Tools.Servers["b"].EnvFile["TOKEN"]; got != "/abs/token" {
		t.Errorf("env_file = %q, want the absolute path unchanged", got)
	}
}
