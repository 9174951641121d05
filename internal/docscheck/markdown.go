// Package docscheck checks the repository's Markdown so that it cannot rot:
// every relative link resolves to a file, and to a heading where it names
// one, and every Go block compiles against the module that owns it.
//
// It is used by tests only: the root module's checks every link and the Go
// blocks that need nothing beyond the root module, and each module beside
// the core (redisbudget, otelretry, examples/sdk) checks the blocks that
// need its dependencies, so that the root module never downloads them.
//
// # Marking a Go block
//
// A ```go block that begins with a package clause is a whole file and is
// type-checked as it stands. Any other ```go block is a function body (or,
// when it parses as such, a run of declarations): it is wrapped in a
// function of a file whose imports are those of the module's names table
// that the block uses. An HTML comment on the lines just before the fence,
// invisible on GitHub, says more:
//
//	<!-- snippet module=redisbudget
//	var rdb redis.UniversalClient
//	-->
//
// module= names the directory, from the repository's root, of the module
// whose test checks the block (the root module when absent); the lines
// after the first are Go statements the block takes as given, placed before
// it in the wrapping function. A block that is not meant to compile says
// why:
//
//	<!-- snippet exempt: the shape of a handler, not a program -->
package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A Problem is one thing wrong with the documentation, where it is.
type Problem struct {
	File string // slash-separated, relative to the repository's root
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// A Block is a fenced ```go block of a Markdown file.
type Block struct {
	File string // slash-separated, relative to the repository's root
	Line int    // line of the block's first line of code
	Code string

	Module     string // directory of the module that checks it; "" for the root
	Exempt     string // why it is not compiled; "" when it is
	Given      string // statements the block takes as given
	GivenLine  int    // line of Given's first statement
	HasMarker  bool
	markerLine int
}

type link struct {
	line   int
	target string
}

// A document is what the checks need of one Markdown file.
type document struct {
	path     string
	anchors  map[string]bool
	links    []link
	blocks   []Block
	problems []Problem
}

var (
	fenceRE   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// An inline link or image: [text](destination "title").
	inlineLinkRE = regexp.MustCompile(`\]\(\s*(<[^>\n]*>|[^\s()]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	// A link reference definition: [label]: destination.
	refDefRE = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)`)
	anchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	markerRE = regexp.MustCompile(`^<!--\s*snippet\b(.*)$`)
)

// parse reads a Markdown file's headings, links (outside code and HTML
// comments) and Go blocks.
func parse(path, text string) *document {
	d := &document{path: path, anchors: map[string]bool{}}
	lines := strings.Split(text, "\n")
	// prose holds the lines outside fenced code and HTML comments, and
	// blank lines in their place, so that line numbers stay true.
	prose := make([]string, len(lines))

	var (
		fence      string // the opening fence while inside a fenced block
		lang       string
		code       []string
		codeLine   int
		inComment  bool
		comment    []string
		commentAt  int
		marker     *Block // the snippet marker that ended on the last non-blank line
		slugsTaken = map[string]int{}
	)
	for i, line := range lines {
		n := i + 1
		if fence != "" {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, fence[:1]) && strings.Trim(trimmed, fence[:1]) == "" && len(trimmed) >= len(fence) && len(line)-len(strings.TrimLeft(line, " ")) <= 3 {
				if lang == "go" {
					b := Block{File: path, Line: codeLine, Code: strings.Join(code, "\n")}
					if marker != nil {
						b.Module, b.Exempt, b.Given, b.GivenLine = marker.Module, marker.Exempt, marker.Given, marker.GivenLine
						b.HasMarker, b.markerLine = true, marker.markerLine
					}
					d.blocks = append(d.blocks, b)
				} else if marker != nil {
					d.problems = append(d.problems, Problem{path, marker.markerLine, "a snippet marker must come just before a ```go block"})
				}
				fence, marker = "", nil
			} else {
				code = append(code, line)
			}
			continue
		}
		if inComment {
			comment = append(comment, line)
			if strings.Contains(line, "-->") {
				inComment = false
				marker = d.endComment(comment, commentAt)
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence, lang, code, codeLine = m[1], m[2], nil, n+1
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "<!--") {
			before, _, _ := strings.Cut(line, "<!--")
			if strings.TrimSpace(before) == "" {
				if marker != nil {
					d.problems = append(d.problems, Problem{path, marker.markerLine, "a snippet marker must come just before a ```go block"})
				}
				comment, commentAt = []string{strings.TrimSpace(line)}, n
				if strings.Contains(line, "-->") {
					marker = d.endComment(comment, commentAt)
				} else {
					inComment = true
				}
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if marker != nil {
			d.problems = append(d.problems, Problem{path, marker.markerLine, "a snippet marker must come just before a ```go block"})
			marker = nil
		}
		prose[i] = line
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if k, taken := slugsTaken[s]; taken {
				slugsTaken[s] = k + 1
				s = fmt.Sprintf("%s-%d", s, k+1)
			} else {
				slugsTaken[s] = 0
			}
			d.anchors[s] = true
		}
		for _, m := range anchorRE.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
	}
	if fence != "" {
		d.problems = append(d.problems, Problem{path, codeLine - 1, "a fenced block is never closed"})
	}
	if marker != nil {
		d.problems = append(d.problems, Problem{path, marker.markerLine, "a snippet marker must come just before a ```go block"})
	}
	d.links = findLinks(prose)
	return d
}

// endComment reads a finished HTML comment; a snippet marker is returned for
// the block that must follow it.
func (d *document) endComment(comment []string, at int) *Block {
	m := markerRE.FindStringSubmatch(comment[0])
	if m == nil {
		return nil
	}
	b := &Block{markerLine: at}
	first, _, _ := strings.Cut(m[1], "-->")
	first = strings.TrimSpace(first)
	if reason, ok := strings.CutPrefix(first, "exempt:"); ok {
		b.Exempt = strings.TrimSpace(reason)
		if b.Exempt == "" {
			d.problems = append(d.problems, Problem{d.path, at, "an exempt snippet must say why"})
		}
	} else if mod, ok := strings.CutPrefix(first, "module="); ok && !strings.ContainsAny(mod, " \t") {
		b.Module = strings.Trim(mod, "/")
	} else if first != "" {
		d.problems = append(d.problems, Problem{d.path, at, fmt.Sprintf("unknown snippet marker %q: want module=DIR or exempt: REASON", first)})
	}
	if len(comment) > 1 {
		var given []string
		for _, l := range comment[1:] {
			l, _, _ = strings.Cut(l, "-->")
			given = append(given, l)
		}
		b.Given = strings.TrimRight(strings.Join(given, "\n"), " \t\n")
		b.GivenLine = at + 1
	}
	return b
}

// findLinks returns the destinations of the inline links, images and link
// reference definitions of prose, leaving out code spans.
func findLinks(prose []string) []link {
	var links []link
	// A paragraph at a time, since a code span may run over a line break.
	for start := 0; start < len(prose); {
		if prose[start] == "" {
			start++
			continue
		}
		end := start
		for end < len(prose) && prose[end] != "" {
			end++
		}
		para := blankCodeSpans(strings.Join(prose[start:end], "\n"))
		lineOf := func(offset int) int { return start + 1 + strings.Count(para[:offset], "\n") }
		for _, m := range inlineLinkRE.FindAllStringSubmatchIndex(para, -1) {
			links = append(links, link{lineOf(m[2]), strings.Trim(para[m[2]:m[3]], "<>")})
		}
		for _, m := range refDefRE.FindAllStringSubmatchIndex(para, -1) {
			links = append(links, link{lineOf(m[2]), strings.Trim(para[m[2]:m[3]], "<>")})
		}
		start = end
	}
	slices.SortStableFunc(links, func(a, b link) int { return a.line - b.line })
	return links
}

// blankCodeSpans replaces the contents of code spans with spaces, keeping
// line breaks, so that nothing in them is read as a link.
func blankCodeSpans(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		run := 0
		for i+run < len(b) && b[i+run] == '`' {
			run++
		}
		closing := strings.Index(s[i+run:], strings.Repeat("`", run))
		// A closing run must be exactly as long as the opening one.
		for closing >= 0 && i+run+closing+run < len(b) && b[i+run+closing+run] == '`' {
			next := strings.Index(s[i+run+closing+run+1:], strings.Repeat("`", run))
			if next < 0 {
				closing = -1
				break
			}
			closing += run + 1 + next
		}
		if closing < 0 {
			i += run
			continue
		}
		for j := i + run; j < i+run+closing; j++ {
			if b[j] != '\n' {
				b[j] = ' '
			}
		}
		i += run + closing + run
	}
	return string(b)
}

var (
	inlineLinkTextRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTagRE        = regexp.MustCompile(`<[^>]+>`)
)

// Slug returns the anchor GitHub gives a heading: its text as rendered
// (code spans' contents kept, a link's text for the link, HTML tags and
// emphasis markers dropped), lower-cased, with every character but
// letters, marks, digits, connector punctuation ("_"), hyphens and spaces
// removed, and each space made a hyphen. A heading whose slug another
// already has gets "-1", "-2" and so on, which parse adds.
//
// Underscores used as emphasis markers (_word_) are kept, where GitHub
// drops them: write emphasis in headings with asterisks.
func Slug(heading string) string {
	text := inlineLinkTextRE.ReplaceAllString(heading, "$1")
	text = htmlTagRE.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), unicode.IsNumber(r), unicode.Is(unicode.Pc, r), r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
