package docscheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ModuleBlocks returns the Go blocks that the module in directory module
// (relative to the root, slash-separated; "" for the root module) checks.
func (r *Repository) ModuleBlocks(module string) []Block {
	var blocks []Block
	for _, b := range r.Blocks() {
		if b.Module == module {
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// Owners checks that every module a block names is a module of the
// repository with a docs_test.go of its own, which is where its blocks are
// checked.
func (r *Repository) Owners() []Problem {
	var problems []Problem
	for _, b := range r.Blocks() {
		if b.Module == "" || b.Exempt != "" {
			continue
		}
		for _, f := range []string{"go.mod", "docs_test.go"} {
			if _, err := os.Stat(path.Join(r.root, b.Module, f)); err != nil {
				problems = append(problems, Problem{b.File, b.markerLine, fmt.Sprintf("module=%s: no %s there to check this block", b.Module, f)})
			}
		}
	}
	return problems
}

// CheckBlocks type-checks blocks against the packages of the module in
// dir. names maps each package name a block may use without importing it
// (http, retryhttp, redis) to its import path; a block is given the
// imports of the names it uses as the X of an X.Y.
//
// The packages' export data comes from `go list -export` in dir, with the
// module proxy off: only what the module's `go mod download` fetched is
// used, and the build cache serves what the tests have compiled already.
func CheckBlocks(dir string, names map[string]string, blocks []Block) ([]Problem, error) {
	var todo []Block
	for _, b := range blocks {
		if b.Exempt == "" {
			todo = append(todo, b)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	fset := token.NewFileSet()
	imp, err := newImporter(fset, dir, names)
	if err != nil {
		return nil, err
	}
	c := &checker{names: names, fset: fset, imp: imp}
	var problems []Problem
	for _, b := range todo {
		problems = append(problems, c.check(b)...)
	}
	return problems, nil
}

// newImporter reads the packages of names, and everything they import, from
// the export data that `go list -export` points at.
func newImporter(fset *token.FileSet, dir string, names map[string]string) (types.Importer, error) {
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	if raceEnabled {
		// The race-built packages of the test binary are in the build
		// cache already; others might have to be compiled.
		args = append(args, "-race")
	}
	paths := make([]string, 0, len(names))
	for _, p := range names {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cmd := exec.Command("go", append(args, paths...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p, file, _ := strings.Cut(sc.Text(), "\t")
		exports[p] = file
	}
	return importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		file := exports[p]
		if file == "" {
			return nil, fmt.Errorf("no export data for %q: add it to the names table", p)
		}
		return os.Open(file)
	}), nil
}

type checker struct {
	names map[string]string
	fset  *token.FileSet
	imp   types.Importer
}

// The shapes of Go block.
const (
	wholeFile = iota
	declarations
	functionBody
)

// check type-checks one block and returns what is wrong with it.
func (c *checker) check(b Block) []Problem {
	ownImports, rest, restLine := splitImports(b.Code, b.Line)
	kind := functionBody
	if startsWith(b.Code, token.PACKAGE) {
		kind = wholeFile
	} else if f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+rest, parser.SkipObjectResolution); err == nil && len(f.Decls) > 0 {
		kind = declarations
	}

	src := c.source(b, kind, ownImports, rest, restLine, nil)
	f, err := parser.ParseFile(c.fset, snippetFile, src, parser.SkipObjectResolution)
	if err != nil {
		return parseProblems(b, err)
	}
	if kind != wholeFile {
		// Import what the block uses and does not declare or import.
		declared := declaredNames(f)
		for _, spec := range f.Imports {
			declared[importName(spec, c.names)] = true
		}
		var imports []string
		for name := range selectorBases(f) {
			if p, ok := c.names[name]; ok && !declared[name] {
				imports = append(imports, name+" "+strconv.Quote(p))
			}
		}
		sort.Strings(imports)
		src = c.source(b, kind, ownImports, rest, restLine, imports)
		if f, err = parser.ParseFile(c.fset, snippetFile, src, parser.SkipObjectResolution); err != nil {
			return parseProblems(b, err)
		}
		useDeclared(f)
	}

	var problems []Problem
	conf := types.Config{
		Importer: c.imp,
		// A block's own imports and those it was given may stand for a
		// local name of the same spelling; a whole file is held to Go's
		// rules.
		DisableUnusedImportCheck: kind != wholeFile,
		Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) {
				problems = append(problems, Problem{b.File, b.lineOf(c.fset.Position(te.Pos)), "does not compile: " + te.Msg})
				return
			}
			problems = append(problems, Problem{b.File, b.Line, "does not compile: " + err.Error()})
		},
	}
	_, _ = conf.Check("snippet", c.fset, []*ast.File{f}, nil) // errors go to conf.Error
	return problems
}

// source builds the file that is type-checked: the block itself when it is
// a whole file, or else the block inside a file of package snippet, with
// the imports given and, for a function body, what the marker says it
// takes as given, inside a function. //line directives make every position
// the block's own in its Markdown file.
func (c *checker) source(b Block, kind int, ownImports, rest string, restLine int, imports []string) string {
	var s strings.Builder
	directive := func(line int) { fmt.Fprintf(&s, "\n//line %s:%d\n", b.File, line) }
	if kind == wholeFile {
		directive(b.Line)
		s.WriteString(b.Code)
		return s.String()
	}
	directive(b.Line)
	s.WriteString("package snippet\n")
	for _, imp := range imports {
		fmt.Fprintf(&s, "import %s\n", imp)
	}
	if ownImports != "" {
		directive(b.Line)
		s.WriteString(ownImports)
	}
	if kind == functionBody {
		s.WriteString("\nfunc _() {")
	}
	if b.Given != "" {
		directive(b.GivenLine)
		s.WriteString(b.Given)
	}
	directive(restLine)
	s.WriteString(rest)
	if kind == functionBody {
		s.WriteString("\n}\n")
	}
	return s.String()
}

// startsWith reports whether the first token of code, comments aside, is tok.
func startsWith(code string, tok token.Token) bool {
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	_, t, _ := sc.Scan()
	return t == tok
}

// splitImports splits the import declarations that begin code, if any,
// from the rest, and returns the line of the rest's first line.
func splitImports(code string, line int) (imports, rest string, restLine int) {
	var sc scanner.Scanner
	file := token.NewFileSet().AddFile("", -1, len(code))
	sc.Init(file, []byte(code), nil, 0)
	end := 0
	for {
		if _, t, _ := sc.Scan(); t != token.IMPORT {
			break
		}
		var pos token.Pos
		for depth := 0; ; {
			var t token.Token
			pos, t, _ = sc.Scan()
			switch t {
			case token.LPAREN:
				depth++
			case token.RPAREN:
				depth--
			}
			if t == token.EOF || (t == token.SEMICOLON && depth == 0) {
				break
			}
		}
		end = file.Offset(pos)
	}
	return code[:end], code[end:], line + strings.Count(code[:end], "\n")
}

// snippetFile is the name the generated file is parsed under: //line
// directives name the Markdown file relative to its directory, ".".
const snippetFile = "snippet.go"

// lineOf returns the line of the block's Markdown file that pos is on, or
// the block's first line when pos is in what was generated around it.
func (b Block) lineOf(pos token.Position) int {
	if filepath.ToSlash(pos.Filename) != b.File {
		return b.Line
	}
	return pos.Line
}

// parseProblems turns a parser's errors into problems.
func parseProblems(b Block, err error) []Problem {
	var list scanner.ErrorList
	if !errors.As(err, &list) {
		return []Problem{{b.File, b.Line, "does not parse: " + err.Error()}}
	}
	var problems []Problem
	for _, e := range list {
		problems = append(problems, Problem{b.File, b.lineOf(e.Pos), "does not parse: " + e.Msg})
	}
	return problems
}

// importName is the name an import declares: its own, or the package name
// the names table gives its path, or else the path's last element.
func importName(spec *ast.ImportSpec, names map[string]string) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	p, _ := strconv.Unquote(spec.Path.Value)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if names[name] == p {
			return name
		}
	}
	return path.Base(p)
}

// selectorBases returns the names X of every X.Y in f.
func selectorBases(f *ast.File) map[string]bool {
	bases := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				bases[id.Name] = true
			}
		}
		return true
	})
	return bases
}

// declaredNames returns every name f declares, at any level.
func declaredNames(f *ast.File) map[string]bool {
	declared := map[string]bool{}
	add := func(ids ...*ast.Ident) {
		for _, id := range ids {
			declared[id.Name] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.ValueSpec:
			add(n.Names...)
		case *ast.TypeSpec:
			add(n.Name)
		case *ast.FuncDecl:
			add(n.Name)
		case *ast.Field:
			add(n.Names...)
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		}
		return true
	})
	return declared
}

// useDeclared adds `_ = x` after each statement of f's function bodies that
// declares x, and at the start of the body of an if, for, range or switch
// whose header declares it, so that a block which declares a variable to
// show it (client := ...) is not refused as "declared and not used".
func useDeclared(f *ast.File) {
	uses := func(names []string) []ast.Stmt {
		var stmts []ast.Stmt
		for _, name := range names {
			if name != "_" {
				stmts = append(stmts, &ast.AssignStmt{Lhs: []ast.Expr{ast.NewIdent("_")}, Tok: token.ASSIGN, Rhs: []ast.Expr{ast.NewIdent(name)}})
			}
		}
		return stmts
	}
	withUses := func(list []ast.Stmt) []ast.Stmt {
		var out []ast.Stmt
		for _, s := range list {
			out = append(out, s)
			out = append(out, uses(stmtDeclares(s))...)
		}
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			n.List = withUses(n.List)
		case *ast.CaseClause:
			n.Body = withUses(n.Body)
		case *ast.CommClause:
			n.Body = withUses(n.Body)
		case *ast.IfStmt:
			n.Body.List = append(uses(stmtDeclares(n.Init)), n.Body.List...)
		case *ast.ForStmt:
			n.Body.List = append(uses(stmtDeclares(n.Init)), n.Body.List...)
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				var names []string
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						names = append(names, id.Name)
					}
				}
				n.Body.List = append(uses(names), n.Body.List...)
			}
		case *ast.SwitchStmt:
			if names := stmtDeclares(n.Init); len(names) > 0 && len(n.Body.List) > 0 {
				cc := n.Body.List[0].(*ast.CaseClause)
				cc.Body = append(uses(names), cc.Body...)
			}
		}
		return true
	})
}

// stmtDeclares returns the variables a statement declares.
func stmtDeclares(s ast.Stmt) []string {
	var names []string
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			for _, e := range s.Lhs {
				if id, ok := e.(*ast.Ident); ok {
					names = append(names, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, spec := range g.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					names = append(names, id.Name)
				}
			}
		}
	}
	return names
}
