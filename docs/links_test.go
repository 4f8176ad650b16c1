// Package docs_test checks the project's own pages: they speak of this repository only. Every
// link in README.md names a file inside it that exists; the pages in docs/ may also send an
// operator to the platforms' own sites (where a bot is created, where the limits are written).
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// link matches a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// platformHosts are the sites of the platforms the bot serves, which docs/ may link to.
var platformHosts = []string{"t.me", "core.telegram.org", "api.slack.com", "slack.com", "discord.com"}

func platformLink(target string) bool {
	rest, ok := strings.CutPrefix(target, "https://")
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(rest, "/")
	for _, h := range platformHosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// readPages returns the repository's root and its pages — README.md and docs/*.md — by path.
func readPages(t *testing.T) (root string, pages map[string][]byte) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = map[string][]byte{}
	for _, p := range append(paths, filepath.Join(root, "README.md")) {
		if pages[p], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	return root, pages
}

func TestDocsLinkOnlyToFilesOfThisRepository(t *testing.T) {
	root, pages := readPages(t)
	checked := 0
	for page, body := range pages {
		for _, m := range link.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			rel, _ := filepath.Rel(root, page)
			if strings.Contains(target, "://") && filepath.Base(page) != "README.md" && platformLink(target) {
				continue
			}
			if strings.Contains(target, "://") {
				t.Errorf("%s links outside the repository: %s", rel, target)
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs := filepath.Clean(filepath.Join(filepath.Dir(page), target))
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s links to %s, which is outside the repository", rel, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the pattern or the pages are wrong")
	}
}
