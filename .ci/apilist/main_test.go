package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/gcexportdata"
)

func TestList(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{{
		name: "constants and variables",
		src: `const Typed time.Duration = 2 * time.Second
const Untyped = 3
const Float = 1.5
const Text = "text"
const unexported = 1
var Err error
var v int`,
		want: []string{
			`const Float untyped float = 1.5`,
			`const Text untyped string = "text"`,
			`const Typed time.Duration = 2000000000`,
			`const Untyped untyped int = 3`,
			`var Err error`,
		},
	}, {
		name: "functions, without the names of parameters and results",
		src: `func Get(ctx context.Context, name string) (n int, err error) { return 0, nil }
func Join(sep string, parts ...string) string { return "" }
func Map[T any, U comparable](xs []T, f func(T) U) []U { return nil }
func unexported() {}`,
		want: []string{
			`func Get(context.Context, string) (int, error)`,
			`func Join(string, ...string) string`,
			`func Map[T any, U comparable]([]T, func(T) U) []U`,
		},
	}, {
		name: "struct, its exported fields and its methods, promoted ones included",
		src: `type Base struct{}
func (Base) Name() string { return "" }
func (*Base) Reset() {}
type T struct {
	Base
	Count int
	hidden int
}
func (t *T) Close() error { return nil }
func (t *T) close() {}`,
		want: []string{
			`method (*Base) Reset()`,
			`method (*T) Close() error`,
			`method (*T) Reset()`,
			`method (Base) Name() string`,
			`method (T) Name() string`,
			`type Base struct`,
			`type T struct`,
			`type T struct, Count int`,
			`type T struct, embedded Base`,
		},
	}, {
		name: "interfaces: methods, sealed, constraint",
		src: `type Closer interface{ Close() error }
type ReadCloser interface {
	Closer
	Read(p []byte) (int, error)
}
type Sealed interface {
	Name() string
	sealed()
}
type Number interface{ ~int | ~float64 }`,
		want: []string{
			`type Closer interface`,
			`type Closer interface, Close() error`,
			`type Number interface`,
			`type Number interface, ~int | ~float64`,
			`type ReadCloser interface`,
			`type ReadCloser interface, Close() error`,
			`type ReadCloser interface, Read([]byte) (int, error)`,
			`type Sealed interface`,
			`type Sealed interface, Name() string`,
			`type Sealed interface, unexported methods`,
		},
	}, {
		name: "other named types, generic types and aliases",
		src: `type Func func(n int) time.Duration
type Reason string
func (r Reason) String() string { return string(r) }
type List[T any] struct{ Items []T }
func (l *List[T]) Len() int { return len(l.Items) }
type Header = http.Header
type config struct{}
type Option func(*config)`,
		want: []string{
			`method (*List[T]) Len() int`,
			`method (Reason) String() string`,
			`type Func func(n int) time.Duration`,
			`type Header = http.Header`,
			`type List[T any] struct`,
			`type List[T any] struct, Items []T`,
			`type Option func(*config)`,
			`type Reason string`,
		},
	}, {
		name: "alias of a type of an internal package",
		src: `type Reason = r.Reason
const Final Reason = "final"`,
		want: []string{
			`const Final Reason = "final"`,
			`method (Reason) String() string`,
			`type Reason = r.Reason`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkg := check(t, tt.src)
			want := make([]string, len(tt.want))
			for i, line := range tt.want {
				want[i] = "pkg example.com/p, " + line
			}
			slices.Sort(want)
			got := List(pkg)
			slices.Sort(got)
			require.Equal(t, want, got)

			// The same lines from the package's export data, as apidiff
			// writes it and main reads it.
			var buf bytes.Buffer
			fmt.Fprintln(&buf, pkg.Path())
			require.NoError(t, gcexportdata.Write(&buf, token.NewFileSet(), pkg))
			read, err := read(&buf)
			require.NoError(t, err)
			got = List(read)
			slices.Sort(got)
			require.Equal(t, want, got)
		})
	}
}

// check type-checks src as the package example.com/p, importing the
// standard library packages it names and example.com/p/internal/r.
func check(t *testing.T, src string) *types.Package {
	t.Helper()
	internal := typeCheck(t, "example.com/p/internal/r", `package r
type Reason string
func (r Reason) String() string { return string(r) }`, nil)
	return typeCheck(t, "example.com/p", "package p\n"+imports(src)+src, internal)
}

func typeCheck(t *testing.T, path, src string, internal *types.Package) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	std := importer.Default()
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if internal != nil && path == internal.Path() {
			return internal, nil
		}
		return std.Import(path)
	})}
	pkg, err := conf.Check(path, fset, []*ast.File{file}, nil)
	require.NoError(t, err)
	return pkg
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// imports is the import declaration of the packages that src names.
func imports(src string) string {
	var decl string
	for _, path := range []string{"context", "net/http", "time", "example.com/p/internal/r"} {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if strings.Contains(src, name+".") {
			decl += fmt.Sprintf("import %q\n", path)
		}
	}
	return decl
}
