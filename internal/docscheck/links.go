package docscheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A Repository is the Markdown of a repository, read once for every check.
type Repository struct {
	root  string
	paths []string // slash-separated, relative to root, in walk order
	docs  map[string]*document
}

// skipDir reports whether a directory holds no documentation of the
// repository's own: installed packages, fixtures, hidden directories.
func skipDir(name string) bool {
	return name == "node_modules" || name == "testdata" || (strings.HasPrefix(name, ".") && name != ".")
}

// Read reads every Markdown file under root.
func Read(root string) (*Repository, error) {
	r := &Repository{root: root, docs: map[string]*document{}}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != root && skipDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(e.Name(), ".md") {
			return nil
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		r.paths = append(r.paths, rel)
		r.docs[rel] = parse(rel, string(text))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Files returns the Markdown files read, relative to the root.
func (r *Repository) Files() []string { return slices.Clone(r.paths) }

// Blocks returns the Go blocks of every file, in order.
func (r *Repository) Blocks() []Block {
	var blocks []Block
	for _, p := range r.paths {
		blocks = append(blocks, r.docs[p].blocks...)
	}
	return blocks
}

// Links checks every relative link and image of every file: its path must
// name a file or directory of the repository, and its fragment, if any, a
// heading (or an <a id> or <a name>) of the Markdown file it names, or a
// line (#L12, #L12-L20) of another file. It also returns what was wrong
// in the files' shape (a snippet marker in the wrong place).
func (r *Repository) Links() []Problem {
	var problems []Problem
	for _, p := range r.paths {
		d := r.docs[p]
		problems = append(problems, d.problems...)
		for _, l := range d.links {
			if msg := r.resolve(p, l.target); msg != "" {
				problems = append(problems, Problem{p, l.line, msg})
			}
		}
	}
	return problems
}

var (
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	lineAnchorRE = regexp.MustCompile(`^L\d+(-L\d+)?$`)
)

// resolve returns what is wrong with a link of the file from, or "" when
// it resolves. Links with a scheme (https:, mailto:) are not followed.
func (r *Repository) resolve(from, target string) string {
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	raw, fragment, _ := strings.Cut(target, "#")
	p, err := url.PathUnescape(raw)
	if err != nil {
		return fmt.Sprintf("link %q: %v", target, err)
	}
	switch {
	case p == "":
		p = from
	case strings.HasPrefix(p, "/"): // GitHub resolves these from the repository's root
		p = path.Clean(strings.TrimPrefix(p, "/"))
	default:
		p = path.Join(path.Dir(from), p)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Sprintf("link %q leaves the repository", target)
	}
	return r.resolveIn(target, p, fragment)
}

// resolveIn checks that p, relative to the root, exists and holds the
// fragment.
func (r *Repository) resolveIn(target, p, fragment string) string {
	info, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(p)))
	if err != nil {
		return fmt.Sprintf("link %q: no file %s", target, p)
	}
	if fragment == "" {
		return ""
	}
	if info.IsDir() {
		return fmt.Sprintf("link %q: a fragment on a directory", target)
	}
	if d, ok := r.docs[p]; ok {
		if !d.anchors[fragment] {
			return fmt.Sprintf("link %q: %s has no heading with anchor #%s", target, p, fragment)
		}
		return ""
	}
	if strings.HasSuffix(p, ".md") {
		return fmt.Sprintf("link %q: %s was not read (under a directory that is skipped)", target, p)
	}
	if !lineAnchorRE.MatchString(fragment) {
		return fmt.Sprintf("link %q: the only fragments of a file that is not Markdown are lines (#L12)", target)
	}
	return ""
}

// URLs checks every full URL of the repository's own files, in the files
// named (Go sources whose doc comments link to the guides, say), as it
// checks a relative link: for repoURL "https://github.com/retryhttp/retryhttp",
// a URL such as
// https://github.com/retryhttp/retryhttp/blob/main/docs/hedging.md#anchor
// or .../tree/main/docs.
func (r *Repository) URLs(repoURL string, files ...string) []Problem {
	re := regexp.MustCompile(regexp.QuoteMeta(repoURL) + `/(?:blob|tree)/[^/\s]+/([^\s)\]>"'` + "`" + `]*)`)
	var problems []Problem
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(f)))
		if err != nil {
			problems = append(problems, Problem{f, 0, err.Error()})
			continue
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				target := strings.TrimRight(m[1], ".,;:")
				raw, fragment, _ := strings.Cut(target, "#")
				p, err := url.PathUnescape(raw)
				if err != nil || p == "" {
					problems = append(problems, Problem{f, i + 1, fmt.Sprintf("URL %q names no file", m[0])})
					continue
				}
				if msg := r.resolveIn(strings.TrimRight(m[0], ".,;:"), path.Clean(p), fragment); msg != "" {
					problems = append(problems, Problem{f, i + 1, msg})
				}
			}
		}
	}
	return problems
}
