package retryhttp_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/retryhttp/retryhttp/internal/docscheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docNames are the packages a Go block of the documentation may use without
// importing them, by the name it uses.
var docNames = map[string]string{
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"http":          "net/http",
	"httptrace":     "net/http/httptrace",
	"io":            "io",
	"log":           "log",
	"os":            "os",
	"slog":          "log/slog",
	"strings":       "strings",
	"testing":       "testing",
	"time":          "time",
	"tls":           "crypto/tls",
	"url":           "net/url",
	"retryhttp":     "github.com/retryhttp/retryhttp",
	"budget":        "github.com/retryhttp/retryhttp/budget",
	"classify":      "github.com/retryhttp/retryhttp/classify",
	"awsretry":      "github.com/retryhttp/retryhttp/awsretry",
	"githubretry":   "github.com/retryhttp/retryhttp/githubretry",
	"googleretry":   "github.com/retryhttp/retryhttp/googleretry",
	"backoff":       "github.com/retryhttp/retryhttp/backoff",
	"base":          "github.com/retryhttp/retryhttp/base",
	"deadline":      "github.com/retryhttp/retryhttp/deadline",
	"hedge":         "github.com/retryhttp/retryhttp/hedge",
	"resume":        "github.com/retryhttp/retryhttp/resume",
	"retryhttptest": "github.com/retryhttp/retryhttp/retryhttptest",
	"server":        "github.com/retryhttp/retryhttp/server",
	"throttle":      "github.com/retryhttp/retryhttp/throttle",
	"pace":          "github.com/retryhttp/retryhttp/pace",
	"stream":        "github.com/retryhttp/retryhttp/stream",
}

// TestDocs keeps the README, the guides in docs/ and the modules' READMEs
// true to the tree: every relative link resolves to a file, and to a
// heading where it names one; the package docs' links to the guides
// resolve too; and every Go block compiles against this module, except
// those marked as checked by another module (whose docs_test.go checks
// them with its dependencies) or exempt, with the reason.
func TestDocs(t *testing.T) {
	repo, err := docscheck.Read(".")
	require.NoError(t, err)
	assert.Contains(t, repo.Files(), "README.md")

	docscheck.Report(t, repo.Links())
	docscheck.Report(t, repo.Owners())

	docFiles, err := filepath.Glob(filepath.Join("*", "doc.go"))
	require.NoError(t, err)
	docscheck.Report(t, repo.URLs("https://github.com/retryhttp/retryhttp", append(docFiles, "doc.go")...))

	problems, err := docscheck.CheckBlocks(".", docNames, repo.ModuleBlocks(""))
	require.NoError(t, err)
	docscheck.Report(t, problems)
}

// TestReadmeCommandsRunInCI: the commands the README opens with are the
// ones CI runs, word for word.
func TestReadmeCommandsRunInCI(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	require.NoError(t, err)

	_, section, ok := strings.Cut(string(readme), "\n## Two commands\n")
	require.True(t, ok, "README.md has no section Two commands")
	section, _, _ = strings.Cut(section, "\n## ")
	commands := regexp.MustCompile("(?m)^```sh\n([^`]*)```").FindAllStringSubmatch(section, -1)
	require.Len(t, commands, 2)
	ciLines := strings.Split(string(ci), "\n")
	for _, c := range commands {
		assert.Contains(t, ciLines, strings.TrimSpace(c[1]))
	}
}
