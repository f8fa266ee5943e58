package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The documentation cannot rot: every `replay …` command written in the
// README or docs/ names a real command and only flags it has, every flag
// of every command is documented in docs/, and every relative link
// resolves, to a page and to a heading in it.

// docFiles are the README and the pages of docs/, relative to the module.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, pages...)
}

// docCommand is one replay command line found in a page.
type docCommand struct {
	where string   // file:line
	args  []string // after the replay word
}

var (
	fenceRe  = regexp.MustCompile("^\\s*```+\\s*([A-Za-z0-9_-]*)")
	inlineRe = regexp.MustCompile("`(replay [^`]+)`")
)

// shellFences are the fenced blocks whose lines are commands.
var shellFences = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// docCommands extracts the replay commands of a markdown text: the lines
// of its shell blocks (a trailing \ joins the next line) and its inline
// code spans that begin with "replay ".
func docCommands(name, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	inFence, shell := false, false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			if inFence {
				inFence = false
			} else {
				inFence, shell = true, shellFences[strings.ToLower(m[1])]
			}
			continue
		}
		where := fmt.Sprintf("%s:%d", name, i+1)
		if !inFence {
			for _, m := range inlineRe.FindAllStringSubmatch(line, -1) {
				out = append(out, commandsIn(where, m[1])...)
			}
			continue
		}
		if !shell {
			continue
		}
		for strings.HasSuffix(strings.TrimRight(line, " "), "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(strings.TrimRight(line, " "), "\\") + " " + lines[i]
		}
		out = append(out, commandsIn(where, line)...)
	}
	return out
}

// commandsIn finds the replay commands of one shell line: each simple
// command (split at pipes, ;, &&, ||, & and $( ) whose program is replay
// (replay, ./replay, path/replay, go run ./cmd/replay), its words up to a
// redirection or a comment.
func commandsIn(where, line string) []docCommand {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "$ ")
	var out []docCommand
	for _, simple := range splitSimple(shellWords(line)) {
		words := simple
		for len(words) > 0 && (isAssignment(words[0]) || words[0] == "sudo" || words[0] == "time" || words[0] == "exec" || words[0] == "!") {
			words = words[1:]
		}
		if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
			words = words[2:]
		}
		if len(words) == 0 || !isReplay(words[0]) {
			continue
		}
		var args []string
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "#") || strings.ContainsAny(w[:1], "<>") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "&>") {
				break
			}
			args = append(args, w)
		}
		out = append(out, docCommand{where: where, args: args})
	}
	return out
}

func isReplay(w string) bool {
	return w == "replay" || strings.HasSuffix(w, "/replay") || w == "replay.exe"
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// isAssignment reports whether shell word w sets a variable (NAME=value).
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	return eq > 0 && varName.MatchString(w[:eq])
}

// shellWords splits a line into words as a shell would, quotes removed,
// with the operators |, ||, &&, ;, &, $( and ) as words of their own.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			words = append(words, line[i:])
			return words
		case c == '|' || c == ';' || c == '(' || c == ')' || (c == '&' && !(i > 0 && line[i-1] == '>')):
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == c) {
				op += string(c)
				i++
			}
			if c == '(' && len(words) > 0 && words[len(words)-1] == "$" {
				words = words[:len(words)-1]
			}
			words = append(words, op)
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			flush()
			words = append(words, "$")
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words
}

// splitSimple cuts words at the shell's operators into simple commands.
func splitSimple(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		switch w {
		case "|", "||", "&&", ";", "&", "(", ")", "$":
			out = append(out, cur)
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	return append(out, cur)
}

// checkDocCommand resolves a documented command against the command tree
// and returns what is wrong with it: a command that does not exist, a
// flag the command does not have.
func checkDocCommand(root *cobra.Command, args []string) error {
	cmd := root
	positional := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			positional = true
		case strings.HasPrefix(a, "-") && len(a) > 1 && !positional:
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			var f *pflag.Flag
			if strings.HasPrefix(a, "--") {
				f = lookupFlag(cmd, name)
			} else if len(name) == 1 {
				f = lookupShort(cmd, name)
			}
			if f == nil {
				return fmt.Errorf("%q: %s has no flag %s", strings.Join(args, " "), cmd.CommandPath(), a)
			}
			if !hasValue && f.Value.Type() != "bool" && f.NoOptDefVal == "" {
				i++ // its value
			}
		case !positional:
			if sub := findSub(cmd, a); sub != nil {
				cmd = sub
				continue
			}
			if cmd.HasSubCommands() && !cmd.Runnable() {
				return fmt.Errorf("%q: %s has no command %q", strings.Join(args, " "), cmd.CommandPath(), a)
			}
			if cmd == root {
				return fmt.Errorf("%q: replay has no command %q", strings.Join(args, " "), a)
			}
			positional = true
		}
	}
	return nil
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	switch name {
	case "help":
		return &pflag.Flag{Name: "help", Value: boolValue{}}
	case "version":
		if cmd.Root() == cmd {
			return &pflag.Flag{Name: "version", Value: boolValue{}}
		}
	}
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	return cmd.InheritedFlags().Lookup(name)
}

func lookupShort(cmd *cobra.Command, short string) *pflag.Flag {
	if short == "h" {
		return &pflag.Flag{Name: "help", Value: boolValue{}}
	}
	if f := cmd.Flags().ShorthandLookup(short); f != nil {
		return f
	}
	return cmd.InheritedFlags().ShorthandLookup(short)
}

// boolValue stands for cobra's own --help and --version.
type boolValue struct{}

func (boolValue) String() string   { return "false" }
func (boolValue) Set(string) error { return nil }
func (boolValue) Type() string     { return "bool" }

func TestDocsCommandsAreReal(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	n := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(strings.TrimPrefix(file, "../../"), string(b)) {
			n++
			if err := checkDocCommand(root, c.args); err != nil {
				t.Errorf("%s: %v", c.where, err)
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d replay commands in README.md and docs/: is the extraction broken?", n)
	}
	t.Logf("%d replay commands checked", n)
}

func TestDocsCommandExtraction(t *testing.T) {
	md := "text `replay run -f FILE --vus 5` and more\n" +
		"```sh\n" +
		"REPLAY_VUS=3 replay run -f t.jsonl \\\n" +
		"  --target http://127.0.0.1:8080 --threshold 'p99<5ms' > out.txt 2>&1 | tee x\n" +
		"cat x | go run ./cmd/replay inspect - # a comment --nope\n" +
		"echo $(./replay version); replay report merge a.json b.json && echo ok\n" +
		"```\n" +
		"```text\nreplay run --not-run\n```\n"
	got := docCommands("X.md", md)
	want := []string{
		"X.md:1 run -f FILE --vus 5",
		"X.md:3 run -f t.jsonl --target http://127.0.0.1:8080 --threshold p99<5ms",
		"X.md:5 inspect -",
		"X.md:6 version",
		"X.md:6 report merge a.json b.json",
	}
	var have []string
	for _, c := range got {
		have = append(have, c.where+" "+strings.Join(c.args, " "))
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("extracted:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	for _, bad := range [][]string{{"runn", "-f", "x"}, {"run", "--no-such-flag"}, {"export", "k7"}, {"inspect", "-Z"}} {
		if checkDocCommand(root, bad) == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	for _, good := range [][]string{{"run", "-f", "FILE", "--vus=5", "--quiet"}, {"export", "k6", "-o", "x.js"}, {"--version"}, {"demo", "--help"}} {
		if err := checkDocCommand(root, good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

func TestEveryFlagIsDocumented(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	docs := all.String()
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	missing := map[string][]string{}
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			checked++
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(docs) {
				missing["--"+f.Name] = append(missing["--"+f.Name], c.CommandPath())
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if checked < 300 {
		t.Errorf("only %d flags walked: is the command tree read whole?", checked)
	}
	t.Logf("%d flags checked (each command's own)", checked)
	var names []string
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s (%s) appears nowhere in docs/", n, strings.Join(missing[n], ", "))
	}
}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// anchors are the GitHub anchors of a page's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(stripFences(text), -1) {
		a := slug(m[1])
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's heading anchor: lower case, punctuation dropped,
// spaces to hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127 && !strings.ContainsRune("—–’“”…·×→", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func stripFences(text string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fenceRe.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestDocsLinksResolve(t *testing.T) {
	texts := map[string]string{}
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Clean(f)] = string(b)
	}
	checked := 0
	for file, text := range texts {
		for _, m := range linkRe.FindAllStringSubmatch(stripFences(text), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %s: %v", strings.TrimPrefix(file, "../../"), link, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			body, ok := texts[target]
			if !ok {
				b, err := os.ReadFile(target)
				if err != nil {
					t.Errorf("%s: link %s: %v", file, link, err)
					continue
				}
				body = string(b)
			}
			if !anchors(body)[anchor] {
				t.Errorf("%s: link %s: no heading with anchor #%s in %s", strings.TrimPrefix(file, "../../"), link, anchor, strings.TrimPrefix(target, "../../"))
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d relative links checked in README.md and docs/: is the link pattern broken?", checked)
	}
}

// mdNameRe finds a markdown file named in a text: a path or a bare name
// ending .md, as a link, in code or in a comment.
var mdNameRe = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b`)

// TestNoFileNamedOutsideRepository: every markdown file that the
// repository's code, docs and scripts name is in the repository, so a
// reader can follow each reference (the design is docs/design.md, not a
// document kept elsewhere). A path resolves from the naming file's folder
// or the repository's root; a bare name is any file of that name in it.
func TestNoFileNamedOutsideRepository(t *testing.T) {
	t.Parallel()
	const root = "../.."
	var files []string
	have := map[string]bool{} // base names of the repository's .md files
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		switch ext := filepath.Ext(p); {
		case ext == ".md":
			have[filepath.Base(p)] = true
			files = append(files, p)
		case ext == ".go" && filepath.Base(p) != "docs_test.go", // its fixtures name pages that are not meant to exist
			ext == ".sh", ext == ".yaml", ext == ".yml", filepath.Base(p) == "Makefile", filepath.Base(p) == "Dockerfile":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, loc := range mdNameRe.FindAllStringIndex(line, -1) {
				name := line[loc[0]:loc[1]]
				if strings.Contains(line[:loc[0]], "://") { // a URL's page, outside by design
					continue
				}
				named++
				if resolves(root, f, name, have) {
					continue
				}
				t.Errorf("%s:%d names %s, which is not in the repository", strings.TrimPrefix(f, root+"/"), i+1, name)
			}
		}
	}
	if named < 100 {
		t.Errorf("only %d markdown files named in the repository: is the pattern broken?", named)
	}
}

// resolves reports whether name, written in file f, is a file of the
// repository at root (have: the base names of its .md files).
func resolves(root, f, name string, have map[string]bool) bool {
	if !strings.Contains(name, "/") {
		return have[name]
	}
	for _, p := range []string{filepath.Join(filepath.Dir(f), name), filepath.Join(root, name)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
