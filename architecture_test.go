package replay_test

// The contract of docs/architecture.md, held by a test: the arrows between
// the rooms of the house (which package may import which), the one room
// each outside library may enter, that nothing under pkg/ hands out a
// type of internal/, that cmd/replay stays thin, and that the test
// helpers live under one roof (internal/testutil) that no command links.
// A change that breaks one fails `go test`, naming the rule, the package
// and the import.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/replay-dev/replay"

// rule forbids the packages of From but those of Except (module-relative;
// "x/..." is x and every package under it) to import the packages of To:
// directly, or with Deep through any chain of imports. To names
// module-relative packages ("x/...") or, with a dot in the first element,
// outside modules by prefix ("github.com/nats-io/..."); "project" is
// every package of the module but the importing one and those of But.
type rule struct {
	From   []string
	Except []string
	To     []string
	But    []string
	Deep   bool
	Why    string
}

// contract is docs/design.md's "The package contract": arrows point from a room to what it
// may import, and nothing points back up.
var contract = []rule{
	{From: []string{"pkg/rrpair"}, To: []string{"project"},
		Why: "the file format imports nothing of the project"},
	{From: []string{"pkg/websocket"}, To: []string{"project"}, But: []string{"pkg/rrpair"},
		Why: "the WebSocket framer is a leaf the recorders, the importers, the run and the mock share: it imports only the file format"},
	{From: []string{"pkg/schedule", "pkg/chart", "pkg/hist", "pkg/tlsca", "pkg/metrics/expo"}, To: []string{"project"},
		Why: "arithmetic, drawing, the TLS termination and the Prometheus text format shared by every room import nothing of the project"},
	// internal/ holds two things: the ground helpers, leaves that any room
	// may stand on, and under internal/testutil the tests' own helpers
	// (TestCommandsLinkNoTestHelper holds them out of the commands).
	{From: []string{"internal/..."}, Except: []string{testutil + "/..."}, To: []string{"project"},
		Why: "the ground helpers under internal/ are leaves: they import nothing of the project, one another included"},
	{From: []string{"pkg/reach"}, To: []string{"pkg/capture/...", "pkg/mock/..."},
		Why: "the way to the real hosts is shared by the recorders and the mock and sits below both"},
	{From: []string{"pkg/result/..."}, To: []string{"pkg/vu/...", "pkg/transport/...", "pkg/transform/...", "pkg/report/...", "pkg/recording/...", "pkg/e2e/...", "pkg/run/...", "pkg/capacity/...", "internal/..."},
		Why: "the vocabulary of a run's results sits below everything that emits or reads them"},
	{From: []string{"pkg/vu/..."}, To: []string{"pkg/transform/...", "pkg/report/...", "pkg/recording/...", "pkg/e2e/...",
		"pkg/transport/conn/...", "pkg/transport/http1/...", "pkg/transport/http2/...", "pkg/transport/negotiate/...", "pkg/transport/ws/...", "pkg/websocket/...", "pkg/run/...", "pkg/capacity/...", "internal/..."},
		Why: "the VUs call the transport, the rewriter and the observers through interfaces"},
	{From: []string{"pkg/report/..."}, To: []string{"pkg/vu/...", "pkg/recording/...", "pkg/transport/...", "pkg/run/...", "pkg/capacity/...", "internal/..."},
		Why: "the report renders and judges plain data; it never sees the engine"},
	{From: []string{"pkg/recording/..."}, To: []string{"pkg/vu/...", "pkg/transport/...", "pkg/run/...", "pkg/capacity/...", "internal/..."},
		Why: "the hot-path consumers see the engine only through pkg/result"},
	{From: []string{"pkg/transport/http2/..."}, To: []string{"pkg/transport/http1/...", "pkg/transport/negotiate/...", "pkg/transport/ws/..."},
		Why: "HTTP/2 stands beside HTTP/1.1 on the connection layer, not on it"},
	{From: []string{"pkg/transport/http1/..."}, To: []string{"pkg/transport/http2/...", "pkg/transport/negotiate/...", "pkg/transport/ws/..."},
		Why: "HTTP/1.1 stands beside HTTP/2 on the connection layer"},
	{From: []string{"pkg/transport/conn/..."}, To: []string{"pkg/transport/http1/...", "pkg/transport/http2/...", "pkg/transport/negotiate/...", "pkg/transport/ws/..."},
		Why: "the connection layer belongs to no protocol"},
	{From: []string{"pkg/transport/..."}, To: []string{"pkg/vu/...", "pkg/transform/...", "pkg/report/...", "pkg/recording/...", "pkg/e2e/...", "pkg/run/...", "pkg/capacity/..."},
		Why: "the transport sits below the VUs"},
	{From: []string{"pkg/transport/ws/..."}, To: []string{"pkg/transport/conn/...", "pkg/transport/http1/...", "pkg/transport/http2/...", "pkg/transport/negotiate/..."},
		Why: "a WebSocket session plays on the connection an upgrade handed over, whatever made it"},
	{From: []string{"pkg/transform/...", "pkg/report/...", "pkg/recording/..."}, To: []string{"github.com/redis/...", "github.com/nats-io/..."}, Deep: true,
		Why: "only pkg/e2e/sink links the Redis and NATS clients"},
	{From: []string{"pkg/rrpair/...", "pkg/rawhttp/...", "pkg/har/...", "pkg/gor/...", "pkg/accesslog/...", "pkg/pcap/..."}, To: []string{"pkg/sniff/...", "pkg/convert/..."},
		Why: "the format packages sit below the sniffer and the import job that ask them"},
	{From: []string{"pkg/capture/...", "pkg/mock/..."}, To: []string{"pkg/vu/...", "pkg/report/...", "pkg/recording/...", "pkg/e2e/...", "pkg/run/...", "pkg/capacity/..."},
		Why: "the recording proxies and the mock are servers: they reach upstreams through the transport, never through a run"},
	{From: []string{"pkg/capture/..."}, To: []string{"pkg/mock/..."},
		Why: "the mock answers from what the recorders write; a recorder never answers"},
	{From: []string{"pkg/mock/..."}, To: []string{"pkg/capture/..."},
		Why: "the mock and the recorders share the listening side (internal/listen), the way to the real hosts (pkg/reach) and the file's writer (pkg/rrpair); neither imports the other"},
	// The run and the capacity search drive pkg/vu: a chain to either ends
	// there, so this rule holds them off without naming where they live.
	{From: []string{"pkg/capture/...", "pkg/mock/...", "pkg/demo/..."}, To: []string{"pkg/report/...", "pkg/recording/...", "pkg/chart/...", "pkg/vu/..."}, Deep: true,
		Why: "the servers never link a run's report, recorder or charts, nor the run itself, through any chain of imports"},
	{From: []string{"cmd/..."}, To: []string{"pkg/vu/...", "pkg/transport/..."},
		Why: "the commands hand options to the run; they never drive the VUs or the transport"},
	{From: []string{"pkg/run/..."}, To: []string{"pkg/capacity/..."},
		Why: "the capacity search drives runs; a run never searches"},
	{From: []string{"pkg/...", "internal/..."}, To: []string{"cmd/..."},
		Why: "nothing imports a command"},
}

// onlyIn names, for each outside library, the rooms that may import it
// directly (non-test code).
var onlyIn = map[string][]string{
	// The HTTP/1.1 client, and the servers: the demo SUT and its worker,
	// the HTTP sink, and the recording and mock servers' listening side.
	"github.com/valyala/fasthttp": {"pkg/transport/http1", "pkg/demo", "pkg/e2e/sink", "pkg/capture", "pkg/mock"},
	"github.com/redis/go-redis":   {"pkg/e2e/sink"},
	"github.com/nats-io":          {"pkg/e2e/sink"},
	"github.com/spf13/cobra":      {"cmd/replay"},
	// Packet captures: the pcap and pcapng readers, the link, IP and TCP
	// layers, the IP defragmenters.
	"github.com/gopacket/gopacket": {"pkg/pcap"},
	// A WebSocket peer independent of pkg/websocket's framer, for tests
	// only (the test helper wspeer, and test files): the framer is the
	// project's own (relayed frames stay as they came), and no command
	// links a test helper (TestCommandsLinkNoTestHelper).
	"github.com/gorilla/websocket": {testutil + "/wspeer"},
}

// testutil is the one roof of the test helpers: the packages only tests
// import (servers on loopback, golden files, fixtures). A package whose
// non-test code imports "testing" lives under it, and no command links
// one.
const testutil = "internal/testutil"

// The thin command: a command file wires one command's flags to a
// library call, so no file of it is over cmdMaxFileLines lines of
// non-test Go and no function over cmdMaxCyclomatic (gocyclo's count).
// What grows past that is policy, and belongs in the package that owns it.
const (
	cmdDir           = "cmd/replay"
	cmdMaxFileLines  = 300
	cmdMaxCyclomatic = 15
)

// Every function of the module's non-test code, test helpers included,
// stays at or under maxCyclomatic (gocyclo's count), so that it can be
// read in one sitting: a parser's fields, a protocol's frames, a report's
// sections each get a function of their own. complexExceptions names,
// as "dir/file.go:Func" ("(Type).Method" for a method), the functions
// allowed over it, each with the reason it reads better whole; none is
// today. A function that grows past the bound is split by what it does,
// or listed here with its reason, at most maxExceptions of them.
const (
	maxCyclomatic = 15
	maxExceptions = 30
)

var complexExceptions = map[string]string{}

// TestArchitecture holds the contract against the module's packages.
func TestArchitecture(t *testing.T) {
	pkgs := loadModule(t)
	byPath := map[string]*packages.Package{}
	for _, p := range pkgs {
		byPath[rel(p.PkgPath)] = p
	}
	t.Run("arrows", func(t *testing.T) {
		for _, v := range checkArrows(byPath, contract) {
			t.Error(v)
		}
	})
	t.Run("outside libraries", func(t *testing.T) {
		for _, v := range checkOnlyIn(byPath, onlyIn) {
			t.Error(v)
		}
	})
	t.Run("no internal type exported from pkg", func(t *testing.T) {
		for _, v := range checkExports(byPath) {
			t.Error(v)
		}
	})
	t.Run("test helpers under one roof", func(t *testing.T) {
		for _, v := range checkRoof(byPath) {
			t.Error(v)
		}
	})
	t.Run("cmd is thin", func(t *testing.T) {
		for _, v := range checkThin(t, cmdDir, cmdMaxFileLines, cmdMaxCyclomatic) {
			t.Error(v)
		}
	})
	t.Run("functions read in one sitting", func(t *testing.T) {
		for _, v := range checkFunctions(t, ".", maxCyclomatic, complexExceptions) {
			t.Error(v)
		}
	})
	// Files built for other platforms (dial_other.go, *_windows.go) import
	// what they import there: the arrows and the outside libraries hold
	// for each platform replay builds for (imports only: go list, no
	// compiling).
	for _, goos := range otherPlatforms {
		t.Run("arrows on "+goos, func(t *testing.T) {
			byPath := map[string]*packages.Package{}
			for _, p := range loadImports(t, goos) {
				byPath[rel(p.PkgPath)] = p
			}
			for _, v := range append(checkArrows(byPath, contract), checkOnlyIn(byPath, onlyIn)...) {
				t.Error(v)
			}
		})
	}
}

// otherPlatforms are the operating systems beside the host's that replay
// builds for (make cross), whose own files the arrows hold too.
var otherPlatforms = []string{"windows", "darwin", "freebsd"}

// loadImports loads the module's packages as built for goos: names and
// imports only.
func loadImports(t *testing.T, goos string) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Env: append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")}
	pkgs, err := packages.Load(cfg, module+"/...")
	if err != nil {
		t.Fatalf("load the module's packages for %s: %v", goos, err)
	}
	return pkgs
}

// TestContractNamesRealPackages: a rule about a package that does not
// exist holds trivially, so every package the contract names by path (a
// pattern's root) must be in the module: renaming a room means renaming
// it here too.
func TestContractNamesRealPackages(t *testing.T) {
	pkgs := loadModule(t)
	have := map[string]bool{}
	for _, p := range pkgs {
		have[rel(p.PkgPath)] = true
	}
	named := map[string]bool{}
	for _, r := range contract {
		for _, p := range slices.Concat(r.From, r.Except, r.To, r.But) {
			if p != "project" && !outside(p) {
				named[strings.TrimSuffix(p, "/...")] = true
			}
		}
	}
	for _, rooms := range onlyIn {
		for _, p := range rooms {
			named[p] = true
		}
	}
	named[cmdDir] = true
	named[testutil] = true
	for p := range named {
		if !have[p] && !haveUnder(have, p) {
			t.Errorf("the contract names %s, which is not a package of the module: update the contract with the house", p)
		}
	}
}

// TestCommandsLinkNoTestHelper: what `go list -deps ./cmd/replay` lists
// (the packages the binary is built of, on every platform replay builds
// for) holds no test helper: no package under internal/testutil, and no
// package of the module whose non-test code imports "testing".
func TestCommandsLinkNoTestHelper(t *testing.T) {
	for _, goos := range append([]string{""}, otherPlatforms...) {
		name := goos
		if name == "" {
			name = "host"
		}
		t.Run(name, func(t *testing.T) {
			cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}
			if goos != "" {
				cfg.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
			}
			cmds, err := packages.Load(cfg, module+"/cmd/...")
			if err != nil {
				t.Fatalf("load the commands: %v", err)
			}
			seen := 0
			for _, p := range cmds {
				if p.Name != "main" {
					continue
				}
				seen++
				for _, v := range checkLinks(p) {
					t.Error(v)
				}
			}
			if seen == 0 {
				t.Fatalf("no command under cmd/: the check would hold trivially")
			}
		})
	}
}

// testHelper reports whether p is a test helper: a package under
// internal/testutil, or one of the module whose non-test code imports
// "testing" (which checkRoof holds under internal/testutil).
func testHelper(p *packages.Package) bool {
	path := rel(p.PkgPath)
	if outside(path) || path == p.PkgPath {
		return false
	}
	_, imports := p.Imports["testing"]
	return matches(path, []string{testutil + "/..."}) || imports
}

// checkLinks returns a line for each test helper the command cmd is
// built with, naming the chain of imports that pulls it in.
func checkLinks(cmd *packages.Package) []string {
	helpers := map[string]bool{}
	packages.Visit([]*packages.Package{cmd}, nil, func(p *packages.Package) {
		if testHelper(p) {
			helpers[rel(p.PkgPath)] = true
		}
	})
	var out []string
	for _, h := range sortedKeys(helpers) {
		chain := findPath(cmd, func(to string) bool { return to == h })
		out = append(out, fmt.Sprintf("%s links %s (%s): a test helper is the tests' own; no command is built with one", rel(cmd.PkgPath), h, strings.Join(chain, " → ")))
	}
	return out
}

// checkRoof returns a line for each package of the module outside
// internal/testutil whose non-test code imports "testing": a helper of
// the tests, outside the roof that keeps it out of the commands.
func checkRoof(byPath map[string]*packages.Package) []string {
	var out []string
	for _, path := range sortedKeys(byPath) {
		if outside(path) || matches(path, []string{testutil + "/..."}) {
			continue
		}
		if _, ok := byPath[path].Imports["testing"]; ok {
			out = append(out, fmt.Sprintf("%s imports testing in non-test code: a test helper goes under %s, or its code into _test.go files", path, testutil))
		}
	}
	return out
}

var (
	loaded  []*packages.Package
	loadErr error
)

// loadModule loads every package of the module (non-test code) with its
// imports and types, once for the test binary.
func loadModule(t *testing.T) []*packages.Package {
	t.Helper()
	if loaded == nil && loadErr == nil {
		cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedFiles}
		loaded, loadErr = packages.Load(cfg, module+"/...")
		if loadErr == nil {
			packages.Visit(loaded, nil, func(p *packages.Package) {
				for _, e := range p.Errors {
					if loadErr == nil {
						loadErr = fmt.Errorf("%s: %v", p.PkgPath, e)
					}
				}
			})
		}
	}
	if loadErr != nil {
		t.Fatalf("load the module's packages: %v", loadErr)
	}
	return loaded
}

// rel is a package path relative to the module; outside packages stay
// whole.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}

// outside reports whether a path names an outside module: a dot in its
// first element.
func outside(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return strings.Contains(first, ".") && first != "."
}

// matches reports whether path (relative) is one of patterns.
func matches(path string, patterns []string) bool {
	for _, p := range patterns {
		if root, ok := strings.CutSuffix(p, "/..."); ok {
			if path == root || strings.HasPrefix(path, root+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// checkArrows returns a line for each import the rules forbid.
func checkArrows(byPath map[string]*packages.Package, rules []rule) []string {
	inProject := func(path string) bool { _, ok := byPath[path]; return ok }
	var out []string
	for _, from := range sortedKeys(byPath) {
		p := byPath[from]
		for _, r := range rules {
			if !matches(from, r.From) || matches(from, r.Except) {
				continue
			}
			forbidden := func(to string) bool {
				if slices.Contains(r.To, "project") && inProject(to) && to != from && !matches(to, r.But) && to != "." {
					return true
				}
				return matches(to, r.To)
			}
			for _, imp := range sortedKeys(p.Imports) {
				if to := rel(imp); forbidden(to) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", from, to, r.Why))
				}
			}
			if r.Deep {
				if chain := findPath(p, forbidden); chain != nil {
					out = append(out, fmt.Sprintf("%s depends on %s (%s): %s", from, chain[len(chain)-1], strings.Join(chain, " → "), r.Why))
				}
			}
		}
	}
	return out
}

// findPath returns a chain of imports from p to a package forbidden
// says yes to, or nil.
func findPath(p *packages.Package, forbidden func(string) bool) []string {
	seen := map[string]bool{}
	var walk func(p *packages.Package, chain []string) []string
	walk = func(p *packages.Package, chain []string) []string {
		for _, imp := range sortedKeys(p.Imports) {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			next := append(slices.Clone(chain), rel(imp))
			if forbidden(rel(imp)) {
				return next
			}
			if c := walk(p.Imports[imp], next); c != nil {
				return c
			}
		}
		return nil
	}
	return walk(p, []string{rel(p.PkgPath)})
}

// checkOnlyIn returns a line for each direct import of an outside library
// from a room not allowed to.
func checkOnlyIn(byPath map[string]*packages.Package, allowed map[string][]string) []string {
	var out []string
	for _, from := range sortedKeys(byPath) {
		if outside(from) {
			continue
		}
		for _, imp := range sortedKeys(byPath[from].Imports) {
			for _, lib := range sortedKeys(allowed) {
				if (imp == lib || strings.HasPrefix(imp, lib+"/")) && !matches(from, allowed[lib]) {
					who := "only " + strings.Join(allowed[lib], ", ")
					if len(allowed[lib]) == 0 {
						who = "only tests"
					}
					out = append(out, fmt.Sprintf("%s imports %s, which %s may import", from, imp, who))
				}
			}
		}
	}
	return out
}

// checkExports returns a line for each exported identifier of a package
// under pkg/ whose type mentions a type declared under internal/: a
// library user could not name it.
func checkExports(byPath map[string]*packages.Package) []string {
	var out []string
	for _, path := range sortedKeys(byPath) {
		p := byPath[path]
		if !strings.HasPrefix(path, "pkg/") || p.Types == nil {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			if in := internalIn(obj.Type(), map[types.Type]bool{}); in != "" {
				out = append(out, fmt.Sprintf("%s.%s exposes %s, a type of internal/: export a type of pkg/ instead", path, name, in))
			}
		}
	}
	return out
}

// internalIn names a type declared under the module's internal/ that t
// mentions in what a user of it sees (exported fields and methods,
// parameters, results, elements), or "".
func internalIn(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && strings.HasPrefix(rel(obj.Pkg().Path()), "internal/") {
			return rel(obj.Pkg().Path()) + "." + obj.Name()
		}
		if t.Obj().Pkg() == nil || outside(rel(t.Obj().Pkg().Path())) {
			return "" // an outside or predeclared type: not the contract's business
		}
		for i := range t.NumMethods() {
			if m := t.Method(i); m.Exported() {
				if in := internalIn(m.Type(), seen); in != "" {
					return in
				}
			}
		}
		for i := range t.TypeArgs().Len() {
			if in := internalIn(t.TypeArgs().At(i), seen); in != "" {
				return in
			}
		}
		return internalIn(t.Underlying(), seen)
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() {
				if in := internalIn(f.Type(), seen); in != "" {
					return in
				}
			}
		}
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if in := internalIn(t.Key(), seen); in != "" {
			return in
		}
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tu := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tu.Len() {
				if in := internalIn(tu.At(i).Type(), seen); in != "" {
					return in
				}
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if m := t.Method(i); m.Exported() {
				if in := internalIn(m.Type(), seen); in != "" {
					return in
				}
			}
		}
	}
	return ""
}

// checkFunctions returns a line for each function of the non-test Go
// files under root over maxCyclo that except does not list, and for each
// exception that names no function over it (a stale reason).
func checkFunctions(t *testing.T, root string, maxCyclo int, except map[string]string) []string {
	t.Helper()
	var out []string
	if len(except) > maxExceptions {
		out = append(out, fmt.Sprintf("%d functions are listed as exceptions to cyclomatic %d, over %d: split some", len(except), maxCyclo, maxExceptions))
	}
	used := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			c := cyclomatic(fn)
			if c <= maxCyclo {
				continue
			}
			key := filepath.ToSlash(path) + ":" + funcName(fn)
			if _, ok := except[key]; ok {
				used[key] = true
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s has cyclomatic complexity %d, over %d: split it by what it does, or list it in complexExceptions with the reason it reads better whole", fset.Position(fn.Pos()), funcName(fn), c, maxCyclo))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range except {
		if !used[key] {
			out = append(out, fmt.Sprintf("complexExceptions lists %s, which is no function over cyclomatic %d: remove it", key, maxCyclo))
		}
	}
	sort.Strings(out)
	return out
}

// checkThin returns a line for each non-test Go file of dir over maxLines
// lines, and for each of its functions over maxCyclo.
func checkThin(t *testing.T, dir string, maxLines, maxCyclo int) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(src), "\n"); lines > maxLines {
			out = append(out, fmt.Sprintf("%s has %d lines of non-test Go, over %d: a command file wires flags to a library call; move the rest into the package that owns it", name, lines, maxLines))
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if c := cyclomatic(fn); c > maxCyclo {
				out = append(out, fmt.Sprintf("%s: %s has cyclomatic complexity %d, over %d: move the policy into a package", fset.Position(fn.Pos()), funcName(fn), c, maxCyclo))
			}
		}
	}
	return out
}

// cyclomatic is gocyclo's count: 1, plus one for each if, for, range,
// non-default case and select clause, && and ||.
func cyclomatic(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}

// haveUnder reports whether the module has a package under dir.
func haveUnder(have map[string]bool, dir string) bool {
	for p := range have {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestContractCatches: the checks find what they are for, on a made-up
// house: an arrow that runs back up, a chain to NATS, an outside library
// in the wrong room, a ground helper that is no leaf, a test helper
// outside its roof, a command linking a test helper, a command grown fat.
func TestContractCatches(t *testing.T) {
	pkg := func(path string, imports ...*packages.Package) *packages.Package {
		p := &packages.Package{PkgPath: path, Imports: map[string]*packages.Package{}}
		for _, imp := range imports {
			p.Imports[imp.PkgPath] = imp
		}
		return p
	}
	nats := pkg("github.com/nats-io/nats.go")
	fasthttp := pkg("github.com/valyala/fasthttp")
	vu := pkg(module + "/pkg/vu")
	sink := pkg(module+"/pkg/e2e/sink", nats, fasthttp)
	e2e := pkg(module+"/pkg/e2e", sink)
	house := map[string]*packages.Package{}
	for _, p := range []*packages.Package{vu, sink, e2e, pkg(module+"/pkg/report", vu, e2e), pkg(module+"/pkg/transform", e2e), pkg(module+"/pkg/rrpair", pkg("strings")),
		pkg(module+"/pkg/result", pkg(module+"/pkg/rrpair")), pkg(module+"/pkg/har", fasthttp),
		pkg(module+"/pkg/mock", pkg(module+"/pkg/metrics", pkg(module+"/pkg/recording", pkg(module+"/pkg/report"))))} {
		house[rel(p.PkgPath)] = p
	}
	// internal/: a ground helper on a room, one on another helper, and a
	// test helper, which may stand on anything.
	testpkg := pkg("testing")
	plural := pkg(module+"/internal/plural", pkg("strings"))
	rawhttp := pkg(module+"/internal/rawhttp", house["pkg/rrpair"])
	fixture := pkg(module+"/internal/testutil/fixture", testpkg, house["pkg/rrpair"], house["pkg/result"])
	vutest := pkg(module+"/pkg/vu/vutest", testpkg, vu)
	for _, p := range []*packages.Package{plural, rawhttp, fixture, vutest,
		pkg(module+"/internal/spool", plural), pkg(module+"/internal/testutil/loopback", testpkg, rawhttp, plural)} {
		house[rel(p.PkgPath)] = p
	}
	got := strings.Join(append(checkArrows(house, contract), checkOnlyIn(house, onlyIn)...), "\n")
	for _, want := range []string{
		"pkg/report imports pkg/vu: the report renders and judges plain data",
		"pkg/transform depends on github.com/nats-io/nats.go (pkg/transform → pkg/e2e → pkg/e2e/sink → github.com/nats-io/nats.go)",
		"pkg/report depends on github.com/nats-io/nats.go",
		"pkg/har imports github.com/valyala/fasthttp, which only pkg/transport/http1, pkg/demo",
		"pkg/mock depends on pkg/recording (pkg/mock → pkg/metrics → pkg/recording): the servers never link",
		"internal/rawhttp imports pkg/rrpair: the ground helpers under internal/ are leaves",
		"internal/spool imports internal/plural: the ground helpers under internal/ are leaves",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the checks missed %q; they said:\n%s", want, got)
		}
	}
	for _, clean := range []string{"pkg/rrpair imports", "pkg/e2e/sink imports", "pkg/result imports", "internal/plural imports", "internal/testutil/"} {
		if strings.Contains(got, clean) {
			t.Errorf("the checks blamed an allowed import (%s):\n%s", clean, got)
		}
	}

	roof := strings.Join(checkRoof(house), "\n")
	if want := "pkg/vu/vutest imports testing in non-test code: a test helper goes under internal/testutil"; !strings.Contains(roof, want) {
		t.Errorf("checkRoof missed %q; it said:\n%s", want, roof)
	}
	if strings.Contains(roof, "internal/testutil/") || strings.Count(roof, "\n") != 0 {
		t.Errorf("checkRoof blamed more than pkg/vu/vutest:\n%s", roof)
	}

	// A command that links a test helper: one under the roof through its
	// own wiring, one outside it through the engine.
	cmd := pkg(module+"/cmd/replay", pkg(module+"/cmd/replay/internal/demorun", fixture), pkg(module+"/pkg/run", vutest), plural)
	links := strings.Join(checkLinks(cmd), "\n")
	for _, want := range []string{
		"cmd/replay links internal/testutil/fixture (cmd/replay → cmd/replay/internal/demorun → internal/testutil/fixture): a test helper is the tests' own",
		"cmd/replay links pkg/vu/vutest (cmd/replay → pkg/run → pkg/vu/vutest)",
	} {
		if !strings.Contains(links, want) {
			t.Errorf("checkLinks missed %q; it said:\n%s", want, links)
		}
	}
	if strings.Contains(links, "links internal/plural") || strings.Contains(links, "links pkg/vu ") || strings.Contains(links, "links testing") {
		t.Errorf("checkLinks blamed a package that is no test helper:\n%s", links)
	}

	dir := t.TempDir()
	fat := "package main\n\nfunc f(a, b, c int) int {\n" + strings.Repeat("\tif a > b && b > c || c > a {\n\t\ta++\n\t}\n", 8) + "\treturn a\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "fat.go"), []byte(fat+strings.Repeat("// filler\n", 30)), 0o644); err != nil {
		t.Fatal(err)
	}
	thin := strings.Join(checkThin(t, dir, 20, 15), "\n")
	if !strings.Contains(thin, "f has cyclomatic complexity 25, over 15") || !strings.Contains(thin, "lines of non-test Go, over 20") {
		t.Errorf("checkThin missed the fat command:\n%s", thin)
	}
	fatKey := filepath.ToSlash(filepath.Join(dir, "fat.go")) + ":f"
	if got := strings.Join(checkFunctions(t, dir, 15, nil), "\n"); !strings.Contains(got, "f has cyclomatic complexity 25, over 15") {
		t.Errorf("checkFunctions missed the complex function:\n%s", got)
	}
	if got := checkFunctions(t, dir, 15, map[string]string{fatKey: "a made-up reason"}); len(got) != 0 {
		t.Errorf("checkFunctions blamed a listed exception: %v", got)
	}
	if got := strings.Join(checkFunctions(t, dir, 15, map[string]string{fatKey: "r", dir + "/gone.go:g": "r"}), "\n"); !strings.Contains(got, "gone.go:g, which is no function over cyclomatic 15") {
		t.Errorf("checkFunctions kept a stale exception:\n%s", got)
	}
}

// TestGlossaryNamesRealTypes: every `pkg.Name` the glossary of
// docs/architecture.md ("One name, one meaning") gives as a word's type
// is an exported identifier of a package of the module by that name: a
// rename in the code that leaves the glossary behind fails here.
func TestGlossaryNamesRealTypes(t *testing.T) {
	src, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	start := strings.Index(doc, "## One name, one meaning")
	if start < 0 {
		t.Fatal(`docs/architecture.md has no "One name, one meaning" section`)
	}
	section := doc[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	scopes := map[string][]*types.Scope{} // package name -> scopes
	for _, p := range loadModule(t) {
		if p.Types != nil {
			scopes[p.Name] = append(scopes[p.Name], p.Types.Scope())
		}
	}
	found := 0
	for _, code := range strings.Split(section, "`")[1:] {
		pkg, name, ok := strings.Cut(code, ".")
		if !ok || strings.ContainsAny(code, " (/:") || scopes[pkg] == nil {
			continue
		}
		name, _, _ = strings.Cut(name, ".") // a field or a method: its type
		name = strings.TrimSuffix(name, "…")
		found++
		if !slices.ContainsFunc(scopes[pkg], func(s *types.Scope) bool {
			if name == "" { // a family of names: Step… is every name that starts so
				return false
			}
			for _, n := range s.Names() {
				if n == name || (strings.HasSuffix(code, "…") && strings.HasPrefix(n, name)) {
					return true
				}
			}
			return false
		}) {
			t.Errorf("the glossary names `%s`, which no package %s of the module declares", code, pkg)
		}
	}
	if found < 10 {
		t.Errorf("the glossary names %d types of the module, want its table's (10 or more)", found)
	}
}
