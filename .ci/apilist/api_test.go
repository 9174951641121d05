package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The files of a tiny module for .ci/api to freeze. Its API is that of
// package tiny and package tiny/sub: the others are internal, commands and
// tests.
var tiny = map[string]string{
	"go.mod": "module example.com/tiny\n\ngo 1.25\n",
	"tiny.go": `// Package tiny is the module that the test of .ci/api freezes.
package tiny

func A() int { return 1 }

func B() int { return 2 }

// T is a type with a method.
type T struct{ Name string }

func (T) Close() error { return nil }
`,
	"tiny_test.go":              "package tiny_test\n\nfunc Exported() {}\n",
	"sub/sub.go":                "// Package sub is a package beside the root.\npackage sub\n\nfunc S() {}\n",
	"internal/hidden/hidden.go": "// Package hidden is internal.\npackage hidden\n\nfunc Exported() {}\n",
	"cmd/tool/main.go":          "// Command tool is a command.\npackage main\n\nfunc Exported() {}\n\nfunc main() {}\n",
	"examples/demo/main.go":     "// Command demo is an example.\npackage main\n\nfunc Exported() {}\n\nfunc main() {}\n",
}

// TestAPI runs .ci/api as CI does, in a copy of the tiny module laid out
// as a repository: the script, and the source of this listing, which the
// script builds. Each step edits the copy and runs the script; the steps
// build on each other.
func TestAPI(t *testing.T) {
	root := t.TempDir()
	for name, text := range tiny {
		writeFile(t, root, name, text)
	}
	for _, name := range []string{"../api", "go.mod", "go.sum", "main.go"} {
		text, err := os.ReadFile(name)
		require.NoError(t, err)
		writeFile(t, filepath.Join(root, ".ci", "apilist"), name, string(text))
	}
	// A cache of the test's own, where apidiff is installed as on a fresh
	// machine; Go's build cache, which moves with it, stays where it is.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "GOCACHE="+strings.TrimSpace(string(gocache)))

	steps := []struct {
		name    string
		edit    func()
		args    []string
		fails   bool
		want    []string
		notWant []string
	}{{
		name: "no baseline",
		args: []string{"check", "."},
		want: []string{"no baseline: the API is not frozen yet\n"},
	}, {
		name: "write",
		args: []string{"write", "."},
		want: []string{"example.com/tiny\n", "example.com/tiny/sub\n"},
	}, {
		name: "internal, main and test packages changed",
		edit: func() {
			for _, name := range []string{"internal/hidden/hidden.go", "cmd/tool/main.go", "examples/demo/main.go", "tiny_test.go"} {
				writeFile(t, root, name, without(t, tiny[name], "func Exported() {}\n"))
			}
		},
		args:    []string{"check", "."},
		want:    []string{"api: no incompatible change (0 compatible)\n"},
		notWant: []string{"Exported"},
	}, {
		name:  "function removed",
		edit:  func() { writeFile(t, root, "tiny.go", without(t, tiny["tiny.go"], "func B() int { return 2 }\n")) },
		args:  []string{"check", "."},
		fails: true,
		want:  []string{"incompatible: example.com/tiny: B: removed\n", "api: 1 incompatible, 0 compatible"},
	}, {
		name: "function and package added",
		edit: func() {
			writeFile(t, root, "tiny.go", tiny["tiny.go"]+"\nfunc C() {}\n")
			writeFile(t, root, "sub/more/more.go", "package more\n")
		},
		args: []string{"check", "."},
		want: []string{
			"compatible: example.com/tiny: C: added\n",
			"compatible: package example.com/tiny/sub/more: added\n",
			"api: no incompatible change (2 compatible)\n",
		},
	}, {
		name:  "package removed",
		edit:  func() { require.NoError(t, os.RemoveAll(filepath.Join(root, "sub"))) },
		args:  []string{"check", "."},
		fails: true,
		want:  []string{"incompatible: package example.com/tiny/sub: removed\n"},
	}, {
		name: "listing edited",
		edit: func() {
			writeFile(t, root, "sub/sub.go", tiny["sub/sub.go"])
			listing, err := os.ReadFile(filepath.Join(root, "api", "tiny.txt"))
			require.NoError(t, err)
			writeFile(t, root, "api/tiny.txt", without(t, string(listing), "pkg example.com/tiny, func A() int\n"))
		},
		args:  []string{"check", "."},
		fails: true,
		want:  []string{"\n+pkg example.com/tiny, func A() int\n", "api/tiny.txt is not the listing of api/tiny/"},
	}}
	for _, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			if step.edit != nil {
				step.edit()
			}
			cmd := exec.Command("bash", append([]string{".ci/api"}, step.args...)...)
			cmd.Dir = root
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if step.fails {
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "want the script to fail, got %v:\n%s", err, out)
			} else {
				require.NoError(t, err, "%s", out)
			}
			for _, s := range step.want {
				require.Contains(t, string(out), s)
			}
			for _, s := range step.notWant {
				require.NotContains(t, string(out), s)
			}
		})
		if !ok {
			break
		}
		if step.name == "write" {
			listing, err := os.ReadFile(filepath.Join(root, "api", "tiny.txt"))
			require.NoError(t, err)
			require.Equal(t, `pkg example.com/tiny, func A() int
pkg example.com/tiny, func B() int
pkg example.com/tiny, method (T) Close() error
pkg example.com/tiny, type T struct
pkg example.com/tiny, type T struct, Name string
pkg example.com/tiny/sub, func S()
`, string(listing))
			require.FileExists(t, filepath.Join(root, "api", "tiny", "tiny.x"))
			require.FileExists(t, filepath.Join(root, "api", "tiny", "sub.x"))
		}
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// without returns text less its first occurrence of part.
func without(t *testing.T, text, part string) string {
	t.Helper()
	before, after, ok := strings.Cut(text, part)
	require.True(t, ok, "%q is not in %q", part, text)
	return before + after
}
