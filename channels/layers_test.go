package channels_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/switchboard-bot/switchboard/"

// layers are the project packages each part of channels may import (outside packages are
// judged elsewhere): the vocabulary knows only the conversation vocabulary and render; the kit
// only the vocabulary; the router and delivery never each other.
var layers = map[string][]string{
	"channels":                {"core/conv", "render"},
	"channels/kit":            {"channels", "core/conv", "render"},
	"channels/internal/forms": {"core/runs", "core/threads", "render"},
	"channels/router":         {"channels", "channels/internal/forms", "channels/kit", "core/conv", "core/runs", "core/threads", "render"},
	"channels/delivery":       {"channels", "channels/internal/forms", "core/conv", "core/runs", "core/threads", "render"},
}

func TestChannelsLayers(t *testing.T) {
	for pkg, allowed := range layers {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(allowed, rel) {
				t.Errorf("%s imports %s; it may import only %v of the project", pkg, rel, allowed)
			}
		}
	}
}
