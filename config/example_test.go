package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// examplePath is the annotated example configuration at the top of the repository.
const examplePath = "../config.example.yaml"

// TestExampleConfigIsValid: config.example.yaml loads and validates as it is, with nothing from
// the environment, and the secrets it shows are placeholders, not credentials.
func TestExampleConfigIsValid(t *testing.T) {
	cfg := mustLoad(t, examplePath, nil)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", examplePath, err)
	}
	if got := cfg.Enabled(); len(got) == 0 {
		t.Errorf("%s enables no platform", examplePath)
	}
	if cfg.Redis.URL == "" || len(cfg.Auth.SigningKeys) == 0 {
		t.Errorf("%s should show a shared Redis and its signing keys", examplePath)
	}
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range config.SecretKeys() {
		f := fieldByKey(t, v, k)
		values := []string{}
		switch f.Kind() {
		case reflect.String:
			values = append(values, f.String())
		case reflect.Slice:
			values = append(values, f.Interface().([]string)...)
		}
		for _, s := range values {
			if s != "" && k != "redis.url" && !strings.Contains(s, "replace") {
				t.Errorf("%s: %s should be an obvious placeholder (containing \"replace\")", examplePath, k)
			}
		}
	}
}
