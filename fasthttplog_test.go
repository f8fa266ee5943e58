package replay_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryFasthttpServerLogsThroughZerolog: every fasthttp.Server the
// module builds (outside tests) sets its Logger, so that none falls back
// on fasthttp's default logger, which writes raw lines to stderr among
// replay's JSON log (printflog.Logger routes them through zerolog). The
// servers are found by parsing the source, so a new one is held to it.
func TestEveryFasthttpServerLogsThroughZerolog(t *testing.T) {
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Server" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fasthttp" {
				return true
			}
			found++
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Logger" {
						return true
					}
				}
			}
			t.Errorf("%s: a fasthttp.Server without a Logger: fasthttp's default writes raw lines to stderr; set Logger: printflog.Logger{...}", fset.Position(lit.Pos()))
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 3 {
		t.Errorf("got %d fasthttp.Server literals, want at least 3 (the demo SUT, the HTTP sink, the mock): the search lost them", found)
	}
}
