package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment variable Load reads as configuration.
const EnvPrefix = "BOT_"

// EnvConfigFile names the environment variable holding the YAML file's path when Load is given
// none. It is not a configuration key.
const EnvConfigFile = "BOT_CONFIG"

// maxSecretFileSize bounds a <key>_file: secrets are short, and a wrong path (a log, a device)
// must not be read whole.
const maxSecretFileSize = 64 << 10

// Load builds the configuration from three layers, each overriding the one before:
//
//  1. the built-in defaults (Default);
//  2. the YAML file at path, or, when path is empty, at $BOT_CONFIG; none when both are empty;
//  3. environment variables BOT_<SECTION>__<KEY> from environ (os.Environ's format), where "__"
//     nests and names are lowercased: BOT_TELEGRAM__API_URL sets telegram.api_url. Lists are
//     comma-separated. A variable set to the empty string is ignored.
//
// Every secret key may instead be given as "<key>_file" in either layer: a path (relative to the
// config file's folder in the file, to the working directory in the environment) whose contents,
// trimmed, are the value; for auth.signing_keys, one key per line. Setting both forms in one
// layer is an error.
//
// The structured keys (llm.providers, profiles, routes, tools.servers, tools.policy) come from the
// file only; the environment setting one, or a key inside one, is an error. A provider's api_key
// may be given as api_key_file, read like the other _file keys; a provider's unset timeout and
// max_retries are llm.timeout and llm.max_retries.
//
// After the layers, an unset llm.api_key is taken from DEEPSEEK_API_KEY in environ when
// llm.base_url is DeepSeek's (a DeepSeek key is never sent to another server), and an unset
// llm.provider becomes openai when a key or a non-default base URL is configured, demo otherwise.
//
// A file that cannot be read or is not valid YAML is an error naming the file. Unknown keys,
// values of the wrong type, bad durations and unreadable _file paths are reported together as a
// *ValidationError naming each key. Load does not call Validate. Error messages never contain a
// secret's value.
func Load(path string, environ []string) (*Config, error) {
	vars := parseEnviron(environ)
	if path == "" {
		path = vars.value[EnvConfigFile]
	}

	base := koanf.New(".")
	if err := base.Load(structs.Provider(Default(), "koanf"), nil); err != nil {
		return nil, fmt.Errorf("config: load defaults: %w", err)
	}

	var problems []Problem
	var layers []*koanf.Koanf
	if path != "" {
		fk, err := loadFile(path)
		if err != nil {
			return nil, err
		}
		src := func(string) string { return path }
		problems = append(problems, checkTree(fk.Raw(), "", src)...)
		problems = append(problems, resolveFiles(fk, filepath.Dir(path), src)...)
		problems = append(problems, resolveProviderKeys(fk, filepath.Dir(path), src)...)
		layers = append(layers, fk)
	}

	ek, envProblems := loadEnv(vars, environ)
	problems = append(problems, envProblems...)
	layers = append(layers, ek)

	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	for _, l := range layers {
		if err := base.Merge(l); err != nil {
			return nil, fmt.Errorf("config: merge: %w", err)
		}
	}

	// Decode onto the defaults, so that a key set to null keeps its default.
	cfg := Default()
	if err := base.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: decoderConfig(nil)}); err != nil {
		// Every key was checked and decoded on its own above; reaching this is a bug. The
		// decoder's messages name keys and types, not values.
		return nil, fmt.Errorf("config: decode: %w", err)
	}

	if len(cfg.Tools.Servers) == 0 {
		cfg.Tools.Servers = nil
	}
	if len(cfg.Tools.Policy) == 0 {
		cfg.Tools.Policy = nil
	}
	if len(cfg.LLM.Providers) == 0 {
		cfg.LLM.Providers = nil
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = nil
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = nil
	}
	cfg.LLM.fillProviderDefaults(base)
	if path != "" {
		cfg.Tools.resolveToolPaths(filepath.Dir(path))
	}
	if cfg.LLM.APIKey == "" && isDeepSeek(cfg.LLM.BaseURL) {
		cfg.LLM.APIKey = strings.TrimSpace(vars.value[deepSeekAPIKeyVariable])
	}
	if cfg.LLM.Provider == "" {
		cfg.LLM.Provider = ProviderDemo
		if cfg.LLM.APIKey != "" || cfg.LLM.BaseURL != DefaultLLMBaseURL {
			cfg.LLM.Provider = ProviderOpenAI
		}
	}
	return cfg, nil
}

// isDeepSeek reports whether an LLM base URL points at DeepSeek's hosted API.
func isDeepSeek(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.deepseek.com")
}

// loadFile reads and parses the YAML file into its own layer.
func loadFile(path string) (*koanf.Koanf, error) {
	ko := koanf.New(".")
	err := ko.Load(file.Provider(path), yaml.Parser())
	if err == nil {
		return ko, nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("config: read config file: %w", err)
	}
	// The parser's messages may quote a piece of the document, which could be a secret.
	return nil, fmt.Errorf("config: %s: invalid YAML: %s", path, sanitizeYAMLError(err))
}

var (
	yamlQuoted     = regexp.MustCompile(" ?`[^`]*`")
	yamlInvalidKey = regexp.MustCompile(`invalid map key: .*`)
)

// sanitizeYAMLError keeps a YAML error's line numbers and reasons and drops any quoted value.
func sanitizeYAMLError(err error) string {
	msg := yamlQuoted.ReplaceAllString(err.Error(), "")
	msg = yamlInvalidKey.ReplaceAllString(msg, "invalid map key")
	msg = strings.TrimPrefix(msg, "yaml: ")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}

// environment is the environment, deduplicated with the last entry winning (as os/exec does).
type environment struct {
	value map[string]string
	names []string // in first-seen order
}

func parseEnviron(environ []string) environment {
	e := environment{value: map[string]string{}}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, seen := e.value[name]; !seen {
			e.names = append(e.names, name)
		}
		e.value[name] = val
	}
	return e
}

// envKey maps BOT_TELEGRAM__API_URL to telegram.api_url.
func envKey(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, EnvPrefix)), "__", ".")
}

// envName maps telegram.api_url to BOT_TELEGRAM__API_URL.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// loadEnv checks the BOT_ variables and loads the accepted ones into their own layer.
func loadEnv(vars environment, environ []string) (*koanf.Koanf, []Problem) {
	var problems []Problem
	accepted := map[string]string{} // key → the variable that sets it
	for _, name := range vars.names {
		if !strings.HasPrefix(name, EnvPrefix) || name == EnvConfigFile {
			continue
		}
		key, val := envKey(name), vars.value[name]
		src := "environment variable " + name
		switch {
		case structuredKey(key) != "":
			if val == "" {
				continue
			}
			problems = append(problems, Problem{Key: displayKey(key), Source: src,
				Message: "is part of " + structuredKey(key) + ", which is structured and set in the YAML file only"})
			continue
		case schema.leaves[key] != nil:
			if val == "" {
				continue
			}
			if p, bad := decodeProblem(key, val, schema.leaves[key]); bad {
				p.Source = src
				problems = append(problems, p)
				continue
			}
		case schema.fileKeys[key] != nil:
			if val == "" {
				continue
			}
		case schema.sections[key]:
			problems = append(problems, Problem{Key: key, Source: src,
				Message: "is a section, not a key; set one of its keys, like " + envName(key+".<key>")})
			continue
		default:
			msg := "unknown key"
			if s := schema.suggest(key); s != "" {
				msg += "; did you mean " + envName(s) + "?"
			}
			problems = append(problems, Problem{Key: displayKey(key), Source: src, Message: msg})
			continue
		}
		if other, dup := accepted[key]; dup {
			problems = append(problems, Problem{Key: key, Source: src,
				Message: "also set by environment variable " + other + "; set it once"})
			continue
		}
		accepted[key] = name
	}

	ko := koanf.New(".")
	err := ko.Load(env.Provider(".", env.Opt{
		Prefix: EnvPrefix,
		TransformFunc: func(name, val string) (string, any) {
			key := envKey(name)
			if accepted[key] != name || vars.value[name] != val {
				// Not accepted above, or an earlier duplicate of a variable set twice.
				return "", nil
			}
			return key, val
		},
		EnvironFunc: func() []string { return environ },
	}), nil)
	if err != nil {
		problems = append(problems, Problem{Message: "cannot read the environment: " + err.Error()})
		return ko, problems
	}
	problems = append(problems, resolveFiles(ko, "", func(key string) string {
		return "environment variable " + accepted[key]
	})...)
	return ko, problems
}

// structuredKeys are the keys holding mappings of mappings or lists of them, set in the YAML
// file only, each checked by its own tree check before it is decoded.
var structuredKeys = map[string]func(key string, v any) []Problem{
	"llm.providers": checkProfilesTree,
	"profiles":      checkProfilesTree,
	"routes":        checkProfilesTree,
	"tools.servers": checkToolsTree,
	"tools.policy":  checkToolsTree,
}

// structuredKey returns the structured key that key is or lies under ("profiles" for
// "profiles.support.model"), or "".
func structuredKey(key string) string {
	for k := range structuredKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return k
		}
	}
	return ""
}

// checkTree checks one layer's nested map against the schema: every key known, sections are
// mappings, and every value decodes into its key's type.
func checkTree(tree map[string]any, prefix string, source func(key string) string) []Problem {
	var problems []Problem
	keys := make([]string, 0, len(tree))
	for k := range tree {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key, v := joinKey(prefix, k), tree[k]
		switch {
		case structuredKeys[key] != nil:
			for _, p := range structuredKeys[key](key, v) {
				p.Source = source(key)
				problems = append(problems, p)
			}
		case schema.leaves[key] != nil:
			if p, bad := decodeProblem(key, v, schema.leaves[key]); bad {
				p.Source = source(key)
				problems = append(problems, p)
			}
		case schema.fileKeys[key] != nil:
			// Checked by resolveFiles.
		case schema.sections[key]:
			switch sub := v.(type) {
			case nil:
			case map[string]any:
				problems = append(problems, checkTree(sub, key, source)...)
			default:
				problems = append(problems, Problem{Key: key, Source: source(key),
					Message: "is a section: expected a mapping of its keys, got " + kindOf(v)})
			}
		default:
			msg := "unknown key"
			if s := schema.suggest(key); s != "" {
				msg += "; did you mean " + s + "?"
			}
			problems = append(problems, Problem{Key: displayKey(key), Source: source(key), Message: msg})
		}
	}
	return problems
}

// displayKey quotes a key path that has an empty segment ("", "telegram."), which would
// otherwise be invisible in a message.
func displayKey(key string) string {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return fmt.Sprintf("%q", key)
	}
	return key
}

// resolveFiles replaces every "<secret>_file" key of one layer with the file's contents.
func resolveFiles(ko *koanf.Koanf, baseDir string, source func(key string) string) []Problem {
	var problems []Problem
	fileKeys := make([]string, 0, len(schema.fileKeys))
	for fk := range schema.fileKeys {
		fileKeys = append(fileKeys, fk)
	}
	sort.Strings(fileKeys)
	for _, fk := range fileKeys {
		if !ko.Exists(fk) {
			continue
		}
		l := schema.fileKeys[fk]
		raw := ko.Get(fk)
		ko.Delete(fk)
		if raw == nil {
			continue
		}
		p, ok := raw.(string)
		if !ok || p == "" {
			problems = append(problems, Problem{Key: fk, Source: source(fk), Message: "expected a file path"})
			continue
		}
		if ko.Get(l.key) != nil {
			problems = append(problems, Problem{Key: fk, Source: source(fk),
				Message: "set either " + l.key + " or " + fk + ", not both"})
			continue
		}
		if !filepath.IsAbs(p) && baseDir != "" {
			p = filepath.Join(baseDir, p)
		}
		content, reason := readSecretFile(p)
		if reason != "" {
			problems = append(problems, Problem{Key: fk, Source: source(fk),
				Message: fmt.Sprintf("cannot use %s: %s", p, reason)})
			continue
		}
		var val any = content
		if l.typ.Kind() == reflect.Slice {
			val = splitLines(content)
		}
		if err := ko.Set(l.key, val); err != nil {
			problems = append(problems, Problem{Key: fk, Source: source(fk), Message: "cannot set the value: " + err.Error()})
		}
	}
	return problems
}

// readSecretFile returns the trimmed contents of a secret file, or a reason it cannot be used.
// The reason never contains any of the file's contents.
func readSecretFile(path string) (content, reason string) {
	f, err := os.Open(path)
	if err != nil {
		return "", pathErrReason(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", pathErrReason(err)
	} else if st.IsDir() {
		return "", "is a directory"
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return "", pathErrReason(err)
	}
	if len(b) > maxSecretFileSize {
		return "", fmt.Sprintf("larger than %d KiB", maxSecretFileSize>>10)
	}
	content = strings.TrimSpace(string(b))
	if content == "" {
		return "", "is empty"
	}
	return content, ""
}

func pathErrReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func splitLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// splitList splits a comma-separated list, trimming items and dropping empty ones.
func splitList(s string) []string {
	out := []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// decoderConfig is the one mapstructure configuration used for every decode: strict about
// unknown keys, exact about key names, and with the hooks for durations and lists that a
// custom decoder config would otherwise lose.
func decoderConfig(result any) *mapstructure.DecoderConfig {
	return &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			numberToDurationHook,
			mapstructure.StringToTimeDurationHookFunc(),
			stringToListHook,
		),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		TagName:          "koanf",
		// Keys match exactly: "API_URL" is not "api_url" (the default matches any case).
		MatchName: func(mapKey, fieldName string) bool { return mapKey == fieldName },
		Result:    result,
	}
}

var errDurationUnit = errors.New("a duration needs a unit")

// numberToDurationHook refuses a bare number for a duration: "lease: 30" would otherwise mean
// 30 nanoseconds.
func numberToDurationHook(f, t reflect.Type, data any) (any, error) {
	if t != durationType || f == durationType {
		return data, nil
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, errDurationUnit
	}
	return data, nil
}

var stringSliceType = reflect.TypeFor[[]string]()

// stringToListHook lets a list be one comma-separated string (the only way env can spell it).
func stringToListHook(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || t != stringSliceType {
		return data, nil
	}
	return splitList(reflect.ValueOf(data).String()), nil
}

// decodeProblem decodes one value into its key's type on its own, and describes the failure.
func decodeProblem(key string, v any, l *leaf) (Problem, bool) {
	if v == nil {
		return Problem{}, false
	}
	out := reflect.New(l.typ)
	d, err := mapstructure.NewDecoder(decoderConfig(out.Interface()))
	if err == nil {
		err = d.Decode(v)
	}
	if err == nil {
		return Problem{}, false
	}
	msg := "expected " + describe(l.typ)
	if l.secret == notSecret {
		msg += ", got " + shortValue(v)
	}
	return Problem{Key: key, Message: msg}, true
}

// shortValue shows a (non-secret) value in an error message.
func shortValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("%q", x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	if s := fmt.Sprint(v); len(s) <= 40 {
		return s
	}
	return kindOf(v)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	}
	return fmt.Sprintf("a value of type %T", v)
}
