package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTree writes files (slash-separated paths to contents) under a new
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

func strs(problems []Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return out
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Where each vendor puts its error, and what is read":       "where-each-vendor-puts-its-error-and-what-is-read",
		"Rescue: which failures each library turns into a success": "rescue-which-failures-each-library-turns-into-a-success",
		"chain: A -> B -> C -> D, D always answers 503":            "chain-a---b---c---d-d-always-answers-503",
		"1 and 2. Fleet outage, and churn":                         "1-and-2-fleet-outage-and-churn",
		"`WithHedging()` and `NoHedge(ctx)`":                       "withhedging-and-nohedgectx",
		"The [fault model](#fault-model), again":                   "the-fault-model-again",
		"Café über_alles <em>now</em>":                             "café-über_alles-now",
		"AWS SDK for Go v2: S3":                                    "aws-sdk-for-go-v2-s3",
	} {
		assert.Equal(t, want, Slug(heading), "Slug(%q)", heading)
	}
}

func TestLinks(t *testing.T) {
	root := writeTree(t, map[string]string{
		"README.md": strings.Join([]string{
			"# Title", // 1
			"",        // 2
			"[guide](docs/guide.md) and [its part](docs/guide.md#a-part-1), [a dir](docs), [code](main.go#L3-L5).", // 3
			"[here](#title) [gone](docs/gone.md) [no heading](docs/guide.md#nowhere)",                              // 4
			"[bad fragment](main.go#main) [out](../x.md) [web](https://example.com/nothing#x) [mail](mailto:a@b)",  // 5
			"`[in a code span](nothing.md)` and a span over",                                                       // 6
			"two lines: `[x](nothing.md)",         // 7
			"[y](nothing.md)`.",                   // 8
			"",                                    // 9
			"```md",                               // 10
			"[in a fence](nothing.md)",            // 11
			"```",                                 // 12
			"<!-- [in a comment](nothing.md) -->", // 13
			"<!--",                                // 14
			"[in a longer comment](nothing.md)",   // 15
			"-->",                                 // 16
			"[ref]: docs/guide.md#a-part",         // 17
			"[badref]: docs/guide.md#a-whole",     // 18
			"![image](docs/missing.png)",          // 19
		}, "\n"),
		"docs/guide.md": "# Guide\n\n## A part\n\n## A part\n\n<a id=\"custom\"></a>\nBack to [the top](../README.md#title), [custom](#custom).\n",
		"main.go":       "package main\n",
	})
	repo, err := Read(root)
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "docs/guide.md"}, repo.Files())
	assert.Equal(t, []string{
		`README.md:4: link "docs/gone.md": no file docs/gone.md`,
		`README.md:4: link "docs/guide.md#nowhere": docs/guide.md has no heading with anchor #nowhere`,
		`README.md:5: link "main.go#main": the only fragments of a file that is not Markdown are lines (#L12)`,
		`README.md:5: link "../x.md" leaves the repository`,
		`README.md:18: link "docs/guide.md#a-whole": docs/guide.md has no heading with anchor #a-whole`,
		`README.md:19: link "docs/missing.png": no file docs/missing.png`,
	}, strs(repo.Links()))
}

func TestURLs(t *testing.T) {
	root := writeTree(t, map[string]string{
		"docs/guide.md": "# Guide\n",
		"doc.go": strings.Join([]string{
			"// See [the guide] and [the folder], not [a gone guide] or [a gone heading].",
			"//",
			"// [the guide]: https://github.com/o/r/blob/main/docs/guide.md#guide",
			"// [the folder]: https://github.com/o/r/tree/main/docs",
			"// [a gone guide]: https://github.com/o/r/blob/main/docs/gone.md",
			"// [a gone heading]: https://github.com/o/r/blob/main/docs/guide.md#gone.",
			"package p",
		}, "\n"),
	})
	repo, err := Read(root)
	require.NoError(t, err)
	assert.Equal(t, []string{
		`doc.go:5: link "https://github.com/o/r/blob/main/docs/gone.md": no file docs/gone.md`,
		`doc.go:6: link "https://github.com/o/r/blob/main/docs/guide.md#gone": docs/guide.md has no heading with anchor #gone`,
	}, strs(repo.URLs("https://github.com/o/r", "doc.go")))
}

func TestMarkers(t *testing.T) {
	root := writeTree(t, map[string]string{
		"README.md": strings.Join([]string{
			"<!-- snippet module=sub",           // 1
			"var rdb int",                       // 2
			"-->",                               // 3
			"```go",                             // 4
			"_ = rdb",                           // 5
			"```",                               // 6
			"<!-- snippet exempt: a sketch -->", // 7
			"",                                  // 8
			"```go",                             // 9
			"sketch()",                          // 10
			"```",                               // 11
			"<!-- snippet module=gone -->",      // 12
			"```go",                             // 13
			"```",                               // 14
			"<!-- snippet exempt: -->",          // 15
			"```go",                             // 16
			"```",                               // 17
			"<!-- snippet please -->",           // 18
			"```go",                             // 19
			"```",                               // 20
			"<!-- snippet -->",                  // 21
			"Some prose.",                       // 22
			"<!-- snippet -->",                  // 23
			"```sh",                             // 24
			"```",                               // 25
		}, "\n"),
		"sub/go.mod":        "module sub\n",
		"sub/docs_test.go":  "package sub\n",
		"gone/placeholder":  "",
		"other/go.mod":      "module other\n",
		"other/README.md":   "```go\nx := 1\n```\n",
		"node_modules/x.md": "[x](nowhere.md)\n",
	})
	repo, err := Read(root)
	require.NoError(t, err)
	blocks := repo.Blocks()
	require.Len(t, blocks, 6)
	assert.Equal(t, Block{File: "README.md", Line: 5, Code: "_ = rdb", Module: "sub", Given: "var rdb int", GivenLine: 2, HasMarker: true, markerLine: 1}, blocks[0])
	assert.Equal(t, "a sketch", blocks[1].Exempt)
	assert.Equal(t, 10, blocks[1].Line)
	assert.Equal(t, Block{File: "other/README.md", Line: 2, Code: "x := 1"}, blocks[5])
	assert.Len(t, repo.ModuleBlocks("sub"), 1)
	assert.Equal(t, []string{
		`README.md:15: an exempt snippet must say why`,
		`README.md:18: unknown snippet marker "please": want module=DIR or exempt: REASON`,
		`README.md:21: a snippet marker must come just before a ` + "```go" + ` block`,
		`README.md:23: a snippet marker must come just before a ` + "```go" + ` block`,
	}, strs(repo.Links()))
	assert.Equal(t, []string{
		`README.md:12: module=gone: no go.mod there to check this block`,
		`README.md:12: module=gone: no docs_test.go there to check this block`,
	}, strs(repo.Owners()))
}

// TestCheckBlocks compiles blocks of every shape against the root module,
// and shows that each kind of mistake is caught on its own line.
func TestCheckBlocks(t *testing.T) {
	root := writeTree(t, map[string]string{"README.md": strings.Join([]string{
		"A whole file:",                       // 1
		"```go",                               // 2
		"package main",                        // 3
		"",                                    // 4
		"import (",                            // 5
		"	\"net/http\"",                       // 6
		"",                                    // 7
		"	\"github.com/retryhttp/retryhttp\"", // 8
		")",                                   // 9
		"",                                    // 10
		"func main() {",                       // 11
		"	_ = &http.Client{Transport: retryhttp.New()}", // 12
		"}",   // 13
		"```", // 14
		"A body, its variables given and unused:", // 15
		"<!-- snippet",          // 16
		"var req *http.Request", // 17
		"-->",                   // 18
		"```go",                 // 19
		"client := &http.Client{Transport: retryhttp.New(retryhttp.WithAdaptiveThrottling())}", // 20
		"resp, err := client.Do(req)",                 // 21
		"if errors.Is(err, retryhttp.ErrThrottled) {", // 22
		"	// nothing was sent",                        // 23
		"}",                                           // 24
		"for i, v := range []int{1} {",                // 25
		"}",                                           // 26
		"```",                                         // 27
		"Declarations:",                               // 28
		"```go",                                       // 29
		"func handler(w http.ResponseWriter, r *http.Request) {", // 30
		"	n := 3",                             // 31
		"}",                                   // 32
		"```",                                 // 33
		"Imports, then a body:",               // 34
		"```go",                               // 35
		"import (",                            // 36
		"	\"github.com/retryhttp/retryhttp\"", // 37
		")",                                   // 38
		"",                                    // 39
		"tr := retryhttp.New(retryhttp.WithMaxAttempts(4))", // 40
		"_ = time.Second", // 41
		"```",             // 42
		"Broken: an option that does not exist, a wrong type.", // 43
		"```go",                         // 44
		"tr := retryhttp.New(",          // 45
		"	retryhttp.WithMaxRetries(4),", // 46
		")",                             // 47
		"var n int = tr",                // 48
		"```",                           // 49
		"Broken: does not parse.",       // 50
		"```go",                         // 51
		"client := &http.Client{",       // 52
		"```",                           // 53
		"Broken: a whole file with an unused import.", // 54
		"```go",          // 55
		"package main",   // 56
		"",               // 57
		"import \"fmt\"", // 58
		"```",            // 59
		"Broken: a given statement that does not compile.", // 60
		"<!-- snippet",                         // 61
		"var req *http.Requester",              // 62
		"-->",                                  // 63
		"```go",                                // 64
		"_ = req",                              // 65
		"```",                                  // 66
		"Exempt:",                              // 67
		"<!-- snippet exempt: pseudo-code -->", // 68
		"```go",                                // 69
		"retry until it works",                 // 70
		"```",                                  // 71
	}, "\n")})
	repo, err := Read(root)
	require.NoError(t, err)
	names := map[string]string{
		"http":      "net/http",
		"errors":    "errors",
		"time":      "time",
		"fmt":       "fmt",
		"retryhttp": "github.com/retryhttp/retryhttp",
	}
	problems, err := CheckBlocks(filepath.Join("..", ".."), names, repo.ModuleBlocks(""))
	require.NoError(t, err)
	assert.Equal(t, []string{
		`README.md:46: does not compile: undefined: retryhttp.WithMaxRetries`,
		`README.md:48: does not compile: cannot use tr (variable of type *retryhttp.Transport) as int value in variable declaration`,
		`README.md:53: does not parse: expected '}', found 'EOF'`,
		`README.md:58: does not compile: "fmt" imported and not used`,
		`README.md:62: does not compile: undefined: http.Requester`,
	}, strs(problems))
}
