package main

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/config"
)

// repoRoot is the repository's top level, where Dockerfile, compose.yaml and config.example.yaml
// live, seen from this package's folder (the working directory of its tests).
const repoRoot = "../.."

// knownKeys returns every key a config file may set and every variable Load reads, by the config
// package's own account of its keys.
func knownKeys() (keys, vars map[string]bool) {
	keys, vars = map[string]bool{}, map[string]bool{config.EnvConfigFile: true}
	for _, s := range config.Reference() {
		for _, k := range s.Keys {
			keys[k.Key], vars[k.Env] = true, true
			if k.Secret {
				keys[k.FileKey], vars[k.FileEnv] = true, true
			}
		}
	}
	return keys, vars
}

// flattenKeys lists the dotted key paths of a YAML mapping's leaves.
func flattenKeys(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			out = append(out, flattenKeys(key, sub)...)
			continue
		}
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// composeFile is the part of compose.yaml these tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Configs  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"configs"`
	Secrets map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

type composeService struct {
	Image       string    `yaml:"image"`
	Command     []string  `yaml:"command"`
	Environment yaml.Node `yaml:"environment"`
	Configs     []struct {
		Source string `yaml:"source"`
		Target string `yaml:"target"`
	} `yaml:"configs"`
	Secrets []string `yaml:"secrets"`
	Ports   []string `yaml:"ports"`
	Deploy  struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

// env returns a service's environment as NAME=value entries, from either of compose's forms (a
// mapping or a list).
func (s composeService) env(t *testing.T) []string {
	t.Helper()
	var out []string
	switch s.Environment.Kind {
	case 0:
	case yaml.MappingNode:
		var m map[string]string
		if err := s.Environment.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			out = append(out, k+"="+v)
		}
	case yaml.SequenceNode:
		if err := s.Environment.Decode(&out); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("environment is neither a mapping nor a list")
	}
	sort.Strings(out)
	return out
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// botServices are the compose services that run the bot: those built from this repository's
// Dockerfile.
func botServices(t *testing.T, c composeFile) map[string]composeService {
	t.Helper()
	out := map[string]composeService{}
	for name, s := range c.Services {
		if s.Image == "" || strings.HasPrefix(s.Image, "switchboard") {
			out[name] = s
		}
	}
	if len(out) == 0 {
		t.Fatal("compose.yaml runs no bot service")
	}
	return out
}

// TestDeployFilesUseKnownKeys: every BOT_ variable in compose.yaml, and every key of
// config.example.yaml and of the config files compose.yaml mounts, is one the config package
// knows, so a renamed key cannot leave a deployment file behind that setting nothing.
func TestDeployFilesUseKnownKeys(t *testing.T) {
	t.Parallel()
	keys, vars := knownKeys()
	c := readCompose(t)

	files := []string{filepath.Join(repoRoot, "config.example.yaml")}
	for _, cf := range c.Configs {
		files = append(files, filepath.Join(repoRoot, cf.File))
	}
	for _, f := range files {
		for _, k := range flattenKeys("", readYAML(t, f)) {
			if !keys[k] {
				t.Errorf("%s sets %s, which is not a configuration key", f, k)
			}
		}
	}

	// The commented alternative (webhook mode) must stay usable: every BOT_ variable a comment
	// of compose.yaml sets is one Load reads.
	raw, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	commented := 0
	for _, m := range commentedVar.FindAllStringSubmatch(string(raw), -1) {
		commented++
		if !vars[m[1]] {
			t.Errorf("compose.yaml's comment sets %s, which Load does not read", m[1])
		}
	}
	if commented == 0 {
		t.Error("compose.yaml has no commented webhook alternative")
	}

	seen := 0
	for name, s := range c.Services {
		for _, kv := range s.env(t) {
			v, _, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(v, config.EnvPrefix) {
				continue
			}
			seen++
			if !vars[v] {
				t.Errorf("compose.yaml service %s sets %s, which Load does not read", name, v)
			}
		}
	}
	if seen == 0 {
		t.Error("compose.yaml sets no BOT_ variable: the test checks nothing")
	}
}

// TestComposeConfigurationIsValid: what compose.yaml gives each bot replica — the mounted
// config file, its BOT_ variables, and the secrets as files at the paths its _FILE variables
// name — loads and validates; the secrets it names are mounted, Redis is the compose service and
// keeps an append-only file, and there are two replicas which poll Telegram — the simple
// default — through the intake lease: Telegram serves one poller per bot, so the replicas must
// share one Redis under one prefix for the lease to keep them polling one at a time.
func TestComposeConfigurationIsValid(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	dir := t.TempDir()

	redis, ok := c.Services["redis"]
	if !ok {
		t.Fatal("compose.yaml has no redis service")
	}
	if i := slices.Index(redis.Command, "--appendonly"); i < 0 || i+1 >= len(redis.Command) || redis.Command[i+1] != "yes" {
		t.Errorf("redis runs %q: want --appendonly yes", redis.Command)
	}

	for name, s := range botServices(t, c) {
		if s.Deploy.Replicas < 2 {
			t.Errorf("service %s: %d replicas, want at least 2 sharing Redis", name, s.Deploy.Replicas)
		}
		var environ []string
		for _, kv := range s.env(t) {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == config.EnvConfigFile:
				// The container path of a mounted config → the file on this side.
				found := false
				for _, m := range s.Configs {
					if m.Target == v {
						src, ok := c.Configs[m.Source]
						if !ok {
							t.Fatalf("service %s mounts config %s, which compose.yaml does not define", name, m.Source)
						}
						v, found = filepath.Join(repoRoot, src.File), true
					}
				}
				if !found {
					t.Fatalf("service %s: %s=%s is not a mounted config's target", name, k, v)
				}
			case strings.HasSuffix(k, "_FILE"):
				secret, ok := strings.CutPrefix(v, "/run/secrets/")
				if !ok || !slices.Contains(s.Secrets, secret) {
					t.Fatalf("service %s: %s=%s is not one of its secrets (/run/secrets/<name>)", name, k, v)
				}
				if _, ok := c.Secrets[secret]; !ok {
					t.Fatalf("secret %s is not defined in compose.yaml", secret)
				}
				// A value valid for every secret: long enough to sign, in Telegram's charset (and
				// a bot token's shape for the token).
				value := "placeholder-secret-0123456789\n"
				if k == "BOT_TELEGRAM__TOKEN_FILE" {
					value = "123456:" + value
				}
				v = filepath.Join(dir, secret)
				if err := os.WriteFile(v, []byte(value), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			environ = append(environ, k+"="+v)
		}

		cfg, err := config.Load("", environ)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		if err := cfg.ValidateRun(); err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		u, err := url.Parse(cfg.Redis.URL)
		if err != nil {
			t.Fatal("redis.url does not parse")
		}
		if _, ok := c.Services[u.Hostname()]; !ok {
			t.Errorf("service %s: redis.url's host %q is not a compose service", name, u.Hostname())
		}
		if len(cfg.Auth.SigningKeys) == 0 {
			t.Errorf("service %s: no auth.signing_keys, required with a shared Redis", name)
		}
		if cfg.Telegram.Token == "" {
			t.Errorf("service %s: no telegram.token: the replicas serve no platform", name)
		}
		if cfg.Telegram.Mode != config.TelegramPolling {
			t.Errorf("service %s: telegram.mode %s, want polling (no public URL needed), webhook left as a commented alternative", name, cfg.Telegram.Mode)
		}
		// Polling replicas take turns through a lease in redis.url under redis.prefix: each
		// replica must reach the same Redis (not an embedded store of its own) with the same
		// prefix, which one service's environment gives every replica.
		if !cfg.SharedStore() {
			t.Errorf("service %s: %d polling replicas without a shared Redis would each poll the bot (409 Conflict)", name, s.Deploy.Replicas)
		}
		_, port, _ := net.SplitHostPort(cfg.HTTP.Addr)
		for _, p := range s.Ports {
			if !strings.HasSuffix(p, ":"+port) {
				t.Errorf("service %s publishes %s, but http.addr listens on port %s", name, p, port)
			}
		}
	}
}

// commentedVar matches a BOT_ variable set in a YAML comment ("# BOT_X: value").
var commentedVar = regexp.MustCompile(`(?m)^\s*#\s*(BOT_[A-Z0-9_]+):`)

// TestCheckConfigAcceptsTheExample: `bot check-config -c config.example.yaml` passes, as the
// example's header promises.
func TestCheckConfigAcceptsTheExample(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	path := filepath.Join(repoRoot, "config.example.yaml")
	code := runContext(context.Background(), []string{"check-config", "-c", path}, strings.NewReader(""), &out, &errb, nil)
	if code != 0 {
		t.Fatalf("bot check-config -c %s: exit %d\n%s", path, code, errb.String())
	}
}
