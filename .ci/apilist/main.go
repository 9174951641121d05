// Command apilist prints the exported API recorded in files of export data
// written by apidiff -w, one declaration a line, sorted, in the style of the
// Go project's api/go1.*.txt:
//
//	pkg example.com/tiny, func A() int
//	pkg example.com/tiny, method (*T) Close() error
//	pkg example.com/tiny, type T struct, Name string
//
// Usage:
//
//	apilist FILE...
//
// .ci/api commits the listing beside the export data, for review: the
// export data is binary, and what .ci/api check compares is apidiff's
// verdict on it, so the listing is made from the same files and check
// makes sure that it still is.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/tools/go/gcexportdata"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: apilist FILE...")
		os.Exit(2)
	}
	var lines []string
	for _, name := range os.Args[1:] {
		pkg, err := readFile(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apilist: %s: %v\n", name, err)
			os.Exit(1)
		}
		lines = append(lines, List(pkg)...)
	}
	slices.Sort(lines)
	w := bufio.NewWriter(os.Stdout)
	for _, l := range slices.Compact(lines) {
		fmt.Fprintln(w, l)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "apilist: %v\n", err)
		os.Exit(1)
	}
}

// readFile reads a file written by apidiff -w: the package's import path
// on a line of its own, then the package's export data.
func readFile(name string) (*types.Package, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f)
}

func read(r io.Reader) (*types.Package, error) {
	br := bufio.NewReader(r)
	path, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("no import path: %v", err)
	}
	path = strings.TrimSuffix(path, "\n")
	return gcexportdata.Read(br, token.NewFileSet(), make(map[string]*types.Package), path)
}

// List returns the exported API of pkg, one line a declaration, in no
// particular order. Packages other than pkg are named by their names.
func List(pkg *types.Package) []string {
	l := lister{pkg: pkg}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if obj := scope.Lookup(name); obj.Exported() {
			l.object(obj)
		}
	}
	return l.lines
}

type lister struct {
	pkg   *types.Package
	lines []string
}

func (l *lister) emit(format string, args ...any) {
	l.lines = append(l.lines, "pkg "+l.pkg.Path()+", "+fmt.Sprintf(format, args...))
}

func (l *lister) qualifier(p *types.Package) string {
	if p == l.pkg {
		return ""
	}
	return p.Name()
}

func (l *lister) typ(t types.Type) string {
	return types.TypeString(t, l.qualifier)
}

// signature is sig's parameters and results without their names, which
// are no part of the API.
func (l *lister) signature(sig *types.Signature) string {
	unnamed := func(t *types.Tuple) *types.Tuple {
		vars := make([]*types.Var, t.Len())
		for i := range vars {
			vars[i] = types.NewParam(token.NoPos, nil, "", t.At(i).Type())
		}
		return types.NewTuple(vars...)
	}
	sig = types.NewSignatureType(nil, nil, nil, unnamed(sig.Params()), unnamed(sig.Results()), sig.Variadic())
	var b bytes.Buffer
	types.WriteSignature(&b, sig, l.qualifier)
	return b.String()
}

func (l *lister) typeParams(list *types.TypeParamList) string {
	if list.Len() == 0 {
		return ""
	}
	params := make([]string, list.Len())
	for i := range params {
		tp := list.At(i)
		params[i] = tp.Obj().Name() + " " + l.typ(tp.Constraint())
	}
	return "[" + strings.Join(params, ", ") + "]"
}

func (l *lister) object(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Const:
		l.emit("const %s %s = %s", obj.Name(), l.typ(obj.Type()), value(obj.Val()))
	case *types.Var:
		l.emit("var %s %s", obj.Name(), l.typ(obj.Type()))
	case *types.Func:
		sig := obj.Type().(*types.Signature)
		l.emit("func %s%s%s", obj.Name(), l.typeParams(sig.TypeParams()), l.signature(sig))
	case *types.TypeName:
		l.typeName(obj)
	}
}

func value(v constant.Value) string {
	if v.Kind() == constant.Float {
		return v.String()
	}
	return v.ExactString()
}

func (l *lister) typeName(obj *types.TypeName) {
	name := obj.Name()
	if alias, ok := obj.Type().(*types.Alias); ok {
		l.emit("type %s%s = %s", name, l.typeParams(alias.TypeParams()), l.typ(alias.Rhs()))
		// A type of an internal package has no name but the alias: what
		// it offers is listed under the alias.
		if named, ok := types.Unalias(alias).(*types.Named); ok && internal(named.Obj().Pkg()) {
			l.members(name, name, named)
		}
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		l.emit("type %s = %s", name, l.typ(obj.Type()))
		return
	}
	decl := name + l.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		l.emit("type %s struct", decl)
	case *types.Interface:
		l.emit("type %s interface", decl)
	default:
		l.emit("type %s %s", decl, l.typ(u))
	}
	l.members(name, decl, named)
}

func internal(pkg *types.Package) bool {
	if pkg == nil {
		return false
	}
	p := "/" + pkg.Path() + "/"
	return strings.Contains(p, "/internal/")
}

// members emits the exported fields of a struct, the methods of an
// interface, and the exported methods of any other type and of its
// pointer, promoted ones included: a field or an interface's method under
// decl, the type's name and type parameters, and a method with name as its
// receiver.
func (l *lister) members(name, decl string, named *types.Named) {
	switch u := named.Underlying().(type) {
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case !f.Exported():
			case f.Embedded():
				l.emit("type %s struct, embedded %s", decl, l.typ(f.Type()))
			default:
				l.emit("type %s struct, %s %s", decl, f.Name(), l.typ(f.Type()))
			}
		}
	case *types.Interface:
		for i := range u.NumEmbeddeds() {
			if _, ok := u.EmbeddedType(i).Underlying().(*types.Interface); !ok {
				l.emit("type %s interface, %s", decl, l.typ(u.EmbeddedType(i)))
			}
		}
		sealed := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				sealed = true
				continue
			}
			l.emit("type %s interface, %s%s", decl, m.Name(), l.signature(m.Type().(*types.Signature)))
		}
		if sealed {
			l.emit("type %s interface, unexported methods", decl)
		}
		return // an interface's methods are its own lines
	}

	recv := name
	if tps := named.TypeParams(); tps.Len() > 0 {
		names := make([]string, tps.Len())
		for i := range names {
			names[i] = tps.At(i).Obj().Name()
		}
		recv += "[" + strings.Join(names, ", ") + "]"
	}
	values := types.NewMethodSet(named)
	for sel := range types.NewMethodSet(types.NewPointer(named)).Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		r := "*" + recv
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			r = recv
		}
		l.emit("method (%s) %s%s", r, m.Name(), l.signature(m.Type().(*types.Signature)))
	}
}
