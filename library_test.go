package replay_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestLibraryPageShowsTheExamples: docs/library.md shows what the
// engine's runnable Examples print, and go test checks those Examples'
// output, so the page cannot drift from what the library does.
func TestLibraryPageShowsTheExamples(t *testing.T) {
	page, err := os.ReadFile("docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ file, example string }{
		{"pkg/run/example_test.go", ""},
		{"pkg/capacity/example_test.go", "Search_Run"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.file, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			var ex *doc.Example
			for _, e := range doc.Examples(f) {
				if e.Name == tt.example {
					ex = e
				}
			}
			if ex == nil || ex.Output == "" {
				t.Fatalf("got no Example%s with an Output in %s, want one", tt.example, tt.file)
			}
			block := "```text\n" + ex.Output + "```\n"
			if !strings.Contains(string(page), block) {
				t.Errorf("docs/library.md does not show Example%s's output (%s):\n%s", tt.example, tt.file, block)
			}
		})
	}
}
