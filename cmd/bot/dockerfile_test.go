//go:build linux

package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// No container runtime can pull images where the tests run, so these tests check what can be
// checked of the image without one: the Dockerfile's own build line yields a static binary
// that, as a non-root user, answers `version` and the HEALTHCHECK command; and .dockerignore
// keeps secrets out of the build context but not the sources.

// dockerStage is one FROM … section of a Dockerfile.
type dockerStage struct {
	from, name string
	args       map[string]string // ARG defaults
	instrs     []dockerInstr
}

type dockerInstr struct {
	cmd  string // upper case: RUN, COPY, …
	rest string // everything after the command, continuation lines joined
	line int
}

// parseDockerfile reads the instructions of each stage: comments dropped, continuation lines
// joined. It understands what this repository's Dockerfile uses, and no more.
func parseDockerfile(t testing.TB, path string) []*dockerStage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []*dockerStage
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, rest, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := dockerInstr{cmd: strings.ToUpper(cmd), rest: strings.TrimSpace(rest), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.rest)
			s := &dockerStage{from: f[0], args: map[string]string{}}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s:%d: %s before FROM", path, in.line, in.cmd)
		}
		s := stages[len(stages)-1]
		if in.cmd == "ARG" {
			name, def, _ := strings.Cut(in.rest, "=")
			s.args[name] = def
		}
		s.instrs = append(s.instrs, in)
	}
	if len(stages) < 2 {
		t.Fatalf("%s: want a build stage and a runtime stage, got %d stages", path, len(stages))
	}
	return stages
}

// find returns the stage's instructions of one kind.
func (s *dockerStage) find(cmd string) []dockerInstr {
	var out []dockerInstr
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// execForm decodes a JSON exec form, like ["/bot", "run"].
func execForm(t testing.TB, in dockerInstr, s string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("Dockerfile:%d: %s %s: want the exec form [\"/path\", \"arg\", …] (no shell in the image)", in.line, in.cmd, s)
	}
	return argv
}

var shellVar = regexp.MustCompile(`^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

// shellFields splits one plain shell command into words as sh would: quotes group, $VAR and
// ${VAR} expand from vars (outside single quotes). Anything beyond that (;, &&, |, redirections,
// $(…), globs) is an error, so that the words are exactly what the build runs.
func shellFields(s string, vars map[string]string) ([]string, error) {
	var out []string
	var word strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '$':
			m := shellVar.FindString(s[i:])
			if m == "" {
				return nil, fmt.Errorf("unsupported $ at %q", s[i:])
			}
			name := strings.Trim(m[1:], "{}")
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("$%s is not an ARG", name)
			}
			word.WriteString(v)
			inWord = true
			i += len(m) - 1
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' || c == '`' {
				return nil, fmt.Errorf("unsupported %c inside double quotes", c)
			} else {
				word.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, word.String())
				word.Reset()
				inWord = false
			}
		case strings.IndexByte(";&|<>()`\\*?[]#~", c) >= 0:
			return nil, fmt.Errorf("unsupported shell syntax %q in %q", c, s)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		out = append(out, word.String())
	}
	return out, nil
}

// dockerBuild is what the Dockerfile says about the binary.
type dockerBuild struct {
	env    []string // NAME=value set on the go build command
	args   []string // go build's arguments, -o's value included
	outIdx int      // index in args of -o's value
	bin    string   // where the runtime stage puts the binary
	health []string // the HEALTHCHECK command, exec form
	entry  []string // the ENTRYPOINT
	port   string   // the EXPOSEd port
}

// readDockerfile checks the Dockerfile's shape and returns its build line, with ARG VERSION set
// to version.
func readDockerfile(t testing.TB, version string) dockerBuild {
	t.Helper()
	path := filepath.Join(repoRoot, "Dockerfile")
	stages := parseDockerfile(t, path)
	build, final := stages[0], stages[len(stages)-1]
	var d dockerBuild

	if build.from != "golang:1.26" {
		t.Errorf("build stage FROM %s, want golang:1.26", build.from)
	}
	var goBuild *dockerInstr
	for _, in := range build.find("RUN") {
		if strings.Contains(in.rest, "go build") {
			if goBuild != nil {
				t.Fatalf("Dockerfile:%d: a second go build", in.line)
			}
			goBuild = &in
		}
	}
	if goBuild == nil {
		t.Fatal("the build stage runs no go build")
	}
	vars := map[string]string{}
	for k, v := range build.args {
		vars[k] = v
	}
	if _, ok := vars["VERSION"]; !ok {
		t.Fatal("the build stage has no ARG VERSION")
	}
	vars["VERSION"] = version
	words, err := shellFields(goBuild.rest, vars)
	if err != nil {
		t.Fatalf("Dockerfile:%d: %v", goBuild.line, err)
	}
	for len(words) > 0 && strings.Contains(words[0], "=") {
		d.env, words = append(d.env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("Dockerfile:%d: want [NAME=value …] go build …, got %q", goBuild.line, words)
	}
	d.args = words[2:]
	d.outIdx = slices.Index(d.args, "-o") + 1
	if d.outIdx == 0 || d.outIdx >= len(d.args) {
		t.Fatalf("Dockerfile:%d: go build has no -o PATH", goBuild.line)
	}
	if d.args[len(d.args)-1] != "./cmd/bot" {
		t.Errorf("Dockerfile:%d: go build of %s, want ./cmd/bot", goBuild.line, d.args[len(d.args)-1])
	}

	// The runtime stage: the binary copied from the build, certificates, a non-root user, and
	// the binary as entry point and health check.
	out := d.args[d.outIdx]
	for _, in := range final.find("COPY") {
		f := strings.Fields(in.rest)
		if len(f) == 3 && f[0] == "--from="+build.name && f[1] == out {
			d.bin = f[2]
		}
	}
	if d.bin == "" {
		t.Fatalf("the runtime stage does not COPY --from=%s %s", build.name, out)
	}
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && !strings.Contains(fmt.Sprint(final.instrs), "ca-certificates") {
		t.Errorf("runtime stage FROM %s has no CA certificates: use distroless/static or copy them", final.from)
	}
	users := final.find("USER")
	if len(users) == 0 {
		t.Error("the runtime stage sets no USER: it would run as root")
	}
	for _, u := range users {
		if name, _, _ := strings.Cut(u.rest, ":"); name == "root" || name == "0" {
			t.Errorf("Dockerfile:%d: USER %s is root", u.line, u.rest)
		}
	}
	hc := final.find("HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("want one HEALTHCHECK in the runtime stage, got %d", len(hc))
	}
	_, cmd, ok := strings.Cut(hc[0].rest, "CMD ")
	if !ok {
		t.Fatalf("Dockerfile:%d: HEALTHCHECK without CMD", hc[0].line)
	}
	d.health = execForm(t, hc[0], strings.TrimSpace(cmd))
	if d.health[0] != d.bin || len(d.health) < 2 || d.health[1] != "healthcheck" {
		t.Errorf("HEALTHCHECK runs %q, want [%q, \"healthcheck\", …]", d.health, d.bin)
	}
	ep := final.find("ENTRYPOINT")
	if len(ep) != 1 {
		t.Fatalf("want one ENTRYPOINT in the runtime stage, got %d", len(ep))
	}
	if d.entry = execForm(t, ep[0], ep[0].rest); d.entry[0] != d.bin {
		t.Errorf("ENTRYPOINT %q does not run %s", d.entry, d.bin)
	}
	if ex := final.find("EXPOSE"); len(ex) == 1 {
		d.port = ex[0].rest
	}
	if _, port, _ := net.SplitHostPort(config.DefaultHTTPAddr); d.port != port {
		t.Errorf("EXPOSE %q, want the default http.addr port %s", d.port, port)
	}
	return d
}

// The load benchmark measures the binary operators run: built as the Dockerfile builds it.
func init() {
	buildShipped = func(tb testing.TB) string { return buildAsDockerfile(tb, readDockerfile(tb, "load")) }
}

// buildAsDockerfile builds ./cmd/bot with the Dockerfile's own command into a folder that a
// user other than root can read, and returns the binary's path.
func buildAsDockerfile(t testing.TB, d dockerBuild) string {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir's parent is private to the test's user; the child may run as nobody.
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bot")
	args := slices.Clone(d.args)
	args[d.outIdx] = bin
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = repoRoot // the Dockerfile builds in the copied repository's top level
	cmd.Env = append(os.Environ(), d.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %q with %q: %v\n%s", args, d.env, err, out)
	}
	return bin
}

// runAsNonRoot runs the binary with only environ (as the image has nothing else), as uid/gid
// 65534 when the test runs as root, and returns its exit code and output.
func runAsNonRoot(t *testing.T, bin string, args, environ []string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = environ
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %s %q: %v", bin, args, err)
	}
	return code, o.String(), e.String()
}

// TestDockerfileBuildsAStaticNonRootBinary: the binary built with the Dockerfile's own go build
// line has no ELF interpreter and no dynamic section (it runs on distroless/static or scratch),
// is stripped, carries the VERSION build argument, and — run as a non-root user with nothing
// but its environment — answers `version`, and the HEALTHCHECK command exits 0 against a
// listener answering /healthz and 1, with a one-line reason that shows no secret, against a
// closed port.
func TestDockerfileBuildsAStaticNonRootBinary(t *testing.T) {
	t.Parallel()
	const version = "v0.0.0-dockerfile-test"
	d := readDockerfile(t, version)
	bin := buildAsDockerfile(t, d)

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %s program header: it is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %q", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -ldflags -s is not in effect")
	}

	code, out, errOut := runAsNonRoot(t, bin, []string{"version"}, nil)
	if code != 0 || strings.TrimSpace(out) != "switchboard "+version {
		t.Errorf("bot version: exit %d, stdout %q, stderr %q; want \"switchboard %s\"", code, out, errOut, version)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	secrets := []string{
		"BOT_TELEGRAM__TOKEN=123456:S3CRET-telegram-token-in-the-env",
		"BOT_AUTH__SIGNING_KEYS=S3CRET-signing-key-0123456789",
	}
	code, out, errOut = runAsNonRoot(t, bin, d.health[1:], append([]string{"BOT_HTTP__ADDR=:" + port}, secrets...))
	if code != 0 {
		t.Errorf("%q against a healthy listener: exit %d, stdout %q, stderr %q", d.health, code, out, errOut)
	}

	closed := closedPort(t)
	code, out, errOut = runAsNonRoot(t, bin, d.health[1:], append([]string{"BOT_HTTP__ADDR=:" + closed}, secrets...))
	if code != 1 {
		t.Errorf("%q against a closed port: exit %d, want 1", d.health, code)
	}
	if lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n"); len(lines) != 1 || !strings.Contains(errOut, "127.0.0.1:"+closed) {
		t.Errorf("%q against a closed port: want a one-line reason naming 127.0.0.1:%s, got %q", d.health, closed, errOut)
	}
	if strings.Contains(out+errOut, "S3CRET") {
		t.Errorf("healthcheck output shows a secret: %q %q", out, errOut)
	}

	if os.Geteuid() == 0 {
		// The child really is not root: a secret file only root may read is refused (and the
		// reason names the path, not the contents).
		secret := filepath.Join(filepath.Dir(bin), "root-only")
		if err := os.WriteFile(secret, []byte("S3CRET-root-only-0123456789"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut = runAsNonRoot(t, bin, d.health[1:], []string{"BOT_HTTP__ADDR=:" + port, "BOT_LLM__API_KEY_FILE=" + secret})
		if code != 1 || !strings.Contains(errOut, "permission denied") || strings.Contains(out+errOut, "S3CRET") {
			t.Errorf("healthcheck reading a root-only secret: exit %d, stdout %q, stderr %q; want 1 and permission denied", code, out, errOut)
		}
	}
}

// dockerignore is a .dockerignore's patterns, matched as Docker does: relative to the context's
// top, "**" for any number of folders, a pattern matching a folder excludes what is inside it,
// "!" re-includes, the last matching pattern wins.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func readDockerignore(t *testing.T, path string) dockerignore {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out dockerignore
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		p := strings.TrimPrefix(filepath.Clean(strings.TrimPrefix(line, "!")), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("(/.*)?$")
		out = append(out, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return out
}

func (d dockerignore) excludes(path string) bool {
	excluded := false
	for _, p := range d {
		if p.re.MatchString(path) {
			excluded = !p.negate
		}
	}
	return excluded
}

// TestDockerignoreKeepsSecretsOutAndSourcesIn: the build context holds every Go source and
// module file the build needs, and none of the places local configuration and secrets live.
func TestDockerignoreKeepsSecretsOutAndSourcesIn(t *testing.T) {
	t.Parallel()
	ig := readDockerignore(t, filepath.Join(repoRoot, ".dockerignore"))
	for _, p := range []string{".git/config", "secrets/telegram_token", "config.yaml", "bin/bot", ".env", "cmd/bot/.env"} {
		if !ig.excludes(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	sources := 0
	err := filepath.WalkDir(repoRoot, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if e.IsDir() {
			if rel == ".git" || e.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "go.mod" || rel == "go.sum" || (strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")) {
			sources++
			if ig.excludes(filepath.ToSlash(rel)) {
				t.Errorf(".dockerignore excludes %s, which the build needs", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sources < 3 {
		t.Fatalf("found %d build inputs under %s: the walk is broken", sources, repoRoot)
	}
}
