// Package docs checks the project's Markdown documentation as a reader meets it: every
// relative link in README.md, docs/*.md and package-provider/README.md must lead somewhere.
// A page that moves or a heading that is renamed breaks the links to it silently otherwise.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// documents are the Markdown files whose links are checked, as globs relative to root.
var documents = []string{"README.md", "docs/*.md", "package-provider/README.md"}

var (
	// inlineLink matches [text](target) and ![alt](target), capturing the target up to a space
	// (a title may follow) or the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// referenceLink matches a reference definition: [label]: target.
	referenceLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// inlineCode matches a code span, whose content is not Markdown.
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// links returns the link targets of a Markdown document, outside fenced code blocks and code
// spans, in order.
func links(markdown string) []string {
	var out []string
	for _, line := range prose(markdown) {
		if m := referenceLink.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// prose returns the lines of a Markdown document outside its fenced code blocks, where links
// and headings are what they look like.
func prose(markdown string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(markdown, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case strings.HasPrefix(f, fence):
				fence = ""
				continue
			}
		}
		if fence == "" {
			out = append(out, line)
		}
	}
	return out
}

// fenceOf returns the fence (``` or ~~~, as long as written) that line opens or closes, or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// anchors returns the anchors GitHub gives a document's headings: lower case, punctuation
// dropped, spaces as hyphens, and -1, -2, … for repeats.
func anchors(markdown string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(markdown) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's anchor for a heading's text.
func slug(text string) string {
	// Link text stands for the link: [a](b) reads as a.
	text = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// external reports whether a link target leaves the repository (a URL of any scheme).
func external(target string) bool {
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) || strings.HasPrefix(target, "//")
}

// broken returns why a relative link target, written in the document at path doc, leads
// nowhere, or "" when it leads somewhere. Anchors are checked in Markdown targets only.
func broken(doc, target string) string {
	file, anchor, _ := strings.Cut(target, "#")
	dest := doc
	if file != "" {
		if strings.HasPrefix(file, "/") {
			return "an absolute path, which GitHub resolves against the host, not the repository"
		}
		dest = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
		if _, err := os.Stat(dest); err != nil {
			return "no such file or directory: " + shown(dest)
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		return "cannot read " + shown(dest) + ": " + err.Error()
	}
	if !anchors(string(b))[anchor] {
		return "no heading with anchor #" + anchor + " in " + shown(dest)
	}
	return ""
}

// shown is a path as the reader knows it: relative to the repository when it is inside it.
func shown(path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}

// TestRelativeLinksResolve reads every document and fails for each relative link that names
// a file that does not exist or a heading its target does not have. docs/api.md is written
// alongside the other pages; until it exists, links to it are reported here like any other.
func TestRelativeLinksResolve(t *testing.T) {
	var docs []string
	for _, g := range documents {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatalf("glob %s: %v", g, err)
		}
		docs = append(docs, m...)
	}
	if len(docs) < 3 {
		t.Fatalf("found only %d documents (%v): is root %q the repository?", len(docs), docs, root)
	}
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatalf("read %s: %v", doc, err)
		}
		for _, target := range links(string(b)) {
			if external(target) {
				continue
			}
			checked++
			if why := broken(doc, target); why != "" {
				t.Errorf("%s: link %q: %s", shown(doc), target, why)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found in any document: the link parser is broken")
	}
}

func TestLinks(t *testing.T) {
	type args struct {
		markdown string
	}
	type want struct {
		links []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"InlineAndImage": {
			reason: "Inline links and images are links, with or without a title.",
			args:   args{markdown: "See [the API](docs/api.md#spec) and ![logo](img/logo.png \"Logo\")."},
			want:   want{links: []string{"docs/api.md#spec", "img/logo.png"}},
		},
		"Reference": {
			reason: "A reference definition's target is a link.",
			args:   args{markdown: "[api]: docs/api.md\n"},
			want:   want{links: []string{"docs/api.md"}},
		},
		"CodeIsNotMarkdown": {
			reason: "Brackets in code spans and fenced blocks are code, not links.",
			args: args{markdown: "`[a](b.md)` and\n```sh\n[x](y.md)\n```\n~~~~\n[z](z.md)\n```\n~~~~\n" +
				"[after](after.md)"},
			want: want{links: []string{"after.md"}},
		},
		"External": {
			reason: "External links are found too; the caller skips them.",
			args:   args{markdown: "[Crossplane](https://crossplane.io) [here](#install)"},
			want:   want{links: []string{"https://crossplane.io", "#install"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := links(tc.args.markdown)
			if diff := cmp.Diff(tc.want.links, got); diff != "" {
				t.Errorf("%s\nlinks(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAnchors(t *testing.T) {
	type args struct {
		markdown string
	}
	type want struct {
		anchors map[string]bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"GitHubSlugs": {
			reason: "Headings become lower case, punctuation goes, spaces become hyphens, repeats are numbered.",
			args: args{markdown: "# function-memcached\n## Provider load (`make e2e-provider-load`)\n" +
				"### Adding a field: the checklist\n## Notes\n## Notes\n## [Linked](x.md) heading\n" +
				"```sh\n# not a heading\n```\n"},
			want: want{anchors: map[string]bool{
				"function-memcached":                   true,
				"provider-load-make-e2e-provider-load": true,
				"adding-a-field-the-checklist":         true,
				"notes":                                true,
				"notes-1":                              true,
				"linked-heading":                       true,
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := anchors(tc.args.markdown)
			if diff := cmp.Diff(tc.want.anchors, got); diff != "" {
				t.Errorf("%s\nanchors(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBroken(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "README.md")
	if err := os.WriteFile(doc, []byte("# Title\n## Install\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "docs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docs", "status.md"), []byte("# Status\n## Events\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type args struct {
		target string
	}
	type want struct {
		broken bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"File":           {reason: "An existing file resolves.", args: args{target: "docs/status.md"}, want: want{broken: false}},
		"Directory":      {reason: "An existing directory resolves.", args: args{target: "docs"}, want: want{broken: false}},
		"MissingFile":    {reason: "A missing file is broken.", args: args{target: "docs/api.md"}, want: want{broken: true}},
		"Anchor":         {reason: "A heading of the target resolves.", args: args{target: "docs/status.md#events"}, want: want{broken: false}},
		"MissingAnchor":  {reason: "A heading the target lacks is broken.", args: args{target: "docs/status.md#ttls"}, want: want{broken: true}},
		"OwnAnchor":      {reason: "An anchor in the document itself resolves.", args: args{target: "#install"}, want: want{broken: false}},
		"OwnMissing":     {reason: "A missing anchor in the document itself is broken.", args: args{target: "#usage"}, want: want{broken: true}},
		"AbsolutePath":   {reason: "An absolute path does not resolve in the repository.", args: args{target: "/docs/status.md"}, want: want{broken: true}},
		"UpAndBackAgain": {reason: "A path through a parent resolves.", args: args{target: "docs/../README.md#title"}, want: want{broken: false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			why := broken(doc, tc.args.target)
			if got := why != ""; got != tc.want.broken {
				t.Errorf("%s\nbroken(%q) = %q, want broken %t", tc.reason, tc.args.target, why, tc.want.broken)
			}
		})
	}
}
