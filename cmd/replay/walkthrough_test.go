package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/demo"
)

// walkthrough is the README's "Test your own service": the shell blocks
// between its markers, in order.
func walkthrough(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- walkthrough:start -->")
	end := strings.Index(text, "<!-- walkthrough:end -->")
	if start < 0 || end < start {
		t.Fatal("README.md: the markers <!-- walkthrough:start --> and <!-- walkthrough:end --> around \"Test your own service\" are missing")
	}
	var script strings.Builder
	in := false
	for _, line := range strings.Split(text[start:end], "\n") {
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			in = !in && shellFences[strings.ToLower(m[1])]
			continue
		}
		if in {
			script.WriteString(line)
			script.WriteByte('\n')
		}
	}
	return script.String()
}

// TestReadmeWalkthrough runs the README's "Test your own service" as
// written, with bash, in an empty directory, replay on PATH, against the
// demo SUT on loopback standing at the address the README gives the
// user's service (127.0.0.1:8080). Every command must succeed (set -e),
// the run must end in a report, and the CI gate must fail where the
// README says it does.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	script := walkthrough(t)
	if !strings.Contains(script, "127.0.0.1:8080") {
		t.Fatal("the walkthrough does not address the service at http://127.0.0.1:8080")
	}
	for _, prog := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("REPLAY_CI") == "1" {
				t.Fatalf("%s is not installed, and REPLAY_CI=1: .ci/run should have installed it", prog)
			}
			t.Skipf("SKIPPED LOUDLY: %s is not installed; the README's walkthrough needs it", prog)
		}
	}
	sut, err := demo.StartWith("127.0.0.1:0", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sut.Close()

	// replay on PATH is this test binary standing in for it (TestMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	shim := "#!/bin/sh\nREPLAY_BE_MAIN=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "replay"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	body := strings.ReplaceAll(script, "127.0.0.1:8080", sut.Addr())
	// Other loopback ports the walkthrough listens on (the recorder's)
	// become free ones, so that a port taken on this machine fails nothing.
	for _, port := range regexp.MustCompile(`127\.0\.0\.1:[0-9]+`).FindAllString(script, -1) {
		if port != "127.0.0.1:8080" {
			body = strings.ReplaceAll(body, port, freeAddr(t))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-x", "-o", "pipefail", "-c", body)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "REPLAY_BE_MAIN=")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	t.Logf("walkthrough output:\n%s", out)
	if sut.Requests() == 0 {
		t.Fatal("the walkthrough sent nothing to the service")
	}
	checkWalkthroughOutcome(t, work, string(out))
}

// checkWalkthroughOutcome holds what the walkthrough promises: a report
// (HTML and JSON files beside the text) and a gate that failed with the
// threshold exit code where it should.
func checkWalkthroughOutcome(t *testing.T, work, out string) {
	t.Helper()
	if !regexp.MustCompile(`gate failed: exit 99\b`).MatchString(out) {
		t.Errorf("the failing CI gate did not exit 99 (a failed threshold) as the README says:\n%s", out)
	}
	// The shard step divides a rate exactly: no word of shards running
	// more than asked (said falsely of every rate run in shards before).
	if strings.Contains(out, "more in all than asked") {
		t.Errorf("the shard step warned that the shards run more than asked; they divide the rate exactly:\n%s", out)
	}
	for _, glob := range []string{"*.html", "*.json", "*.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(work, glob))
		if len(m) == 0 {
			t.Errorf("the walkthrough left no %s in its directory", glob)
		}
	}
}
