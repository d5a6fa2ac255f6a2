// Package docs holds the README and docs/ to the tree: what they link to,
// the tests and benchmarks they name and the make targets they give exist.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var root = filepath.Join("..", "..")

// pages are README.md and every docs/**/*.md, relative to the root.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func read(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// prose is a page without its fenced code blocks: what a reader is told,
// not what they are shown.
func prose(text string) string { return fenced(text, false) }

// code is a page's fenced code blocks only.
func code(text string) string { return fenced(text, true) }

// fenced returns the lines of text inside fenced code blocks (inside
// true) or outside them.
func fenced(text string, inside bool) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in == inside {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link of the README and docs/ names a
// file or directory of the tree, and its #anchor a heading of that page.
func TestLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		for _, m := range link.FindAllStringSubmatch(prose(read(t, page)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(read(t, file))[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, file, anchor)
			}
		}
	}
}

// anchors are a page's headings as GitHub links them.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(prose(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestIndexListsEveryPage: docs/README.md links every page of docs/.
func TestIndexListsEveryPage(t *testing.T) {
	index := read(t, "docs/README.md")
	linked := map[string]bool{}
	for _, m := range link.FindAllStringSubmatch(index, -1) {
		path, _, _ := strings.Cut(m[1], "#")
		linked[filepath.ToSlash(filepath.Clean(path))] = true
	}
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" && !linked[e.Name()] {
			t.Errorf("docs/README.md does not list docs/%s", e.Name())
		}
	}
}

var (
	goFunc    = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z0-9][A-Za-z0-9_]*)\(`)
	namedTest = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)\b`)
)

// TestNamedTestsExist: every test, benchmark and fuzz target the README and
// docs/ name is a function of the repository's tests: a claim backed by a
// test that was renamed or removed is backed by nothing.
func TestNamedTestsExist(t *testing.T) {
	defined := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "out" || e.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(p, "_test.go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range goFunc.FindAllStringSubmatch(string(data), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) < 100 {
		t.Fatalf("found only %d test functions: the walk is wrong", len(defined))
	}
	missing := map[string][]string{}
	for _, page := range pages(t) {
		for _, m := range namedTest.FindAllStringSubmatch(read(t, page), -1) {
			if !defined[m[1]] {
				missing[m[1]] = append(missing[m[1]], page)
			}
		}
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s names %s, which no test defines", strings.Join(unique(missing[n]), ", "), n)
	}
}

func unique(ss []string) []string {
	sort.Strings(ss)
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

var (
	makeTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):.*##`)
	makeUse    = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
)

// TestMakeTargetsExist: every `make X` of the README and docs/ is a target
// of the Makefile.
func TestMakeTargetsExist(t *testing.T) {
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(read(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	if !targets["test"] || !targets["dev"] {
		t.Fatalf("the Makefile's targets were not read: %v", targets)
	}
	for _, page := range pages(t) {
		text := read(t, page)
		for _, m := range makeUse.FindAllStringSubmatch(text, -1) {
			if !targets[m[1]] {
				t.Errorf("%s gives `make %s`, which the Makefile has no target for", page, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^\s*make ([a-z][a-z0-9-]*)`).FindAllStringSubmatch(code(text), -1) {
			if !targets[m[1]] {
				t.Errorf("%s runs make %s, which the Makefile has no target for", page, m[1])
			}
		}
	}
}
