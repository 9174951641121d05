package docscheck

// TB is the part of testing.TB that the helpers below use.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Report reports each problem to t as an error.
func Report(t TB, problems []Problem) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s", p)
	}
}

// CheckModule is the test of a module beside the core: it type-checks the
// Go blocks of the repository rooted at root that are marked as the
// module's (module=DIR, DIR relative to root), against the module in the
// current directory, and reports their problems to t. A module none of
// whose blocks remain fails, so that a marker cannot drift away unseen.
func CheckModule(t TB, root, module string, names map[string]string) {
	t.Helper()
	repo, err := Read(root)
	if err != nil {
		t.Fatalf("reading the documentation: %v", err)
	}
	blocks := repo.ModuleBlocks(module)
	if len(blocks) == 0 {
		t.Fatalf("no Go block of the documentation is marked module=%s", module)
	}
	problems, err := CheckBlocks(".", names, blocks)
	if err != nil {
		t.Fatalf("%v", err)
	}
	Report(t, problems)
}
