package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// dirState is every file under dir with its bytes and mode: what a
// refused start must leave as it was.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b, _ := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		st[rel] = fi.Mode().String() + " " + string(b)
		return nil
	})
	return st
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestRecordRefusedStartLeavesDisk: a `replay record` start refused for
// any reason (a bad flag, a busy port, a CA key missing, an existing -o
// without --force) leaves every file as it was, byte for byte, and adds
// none: no empty recording, no temporary file, no --ca-out directory.
func TestRecordRefusedStartLeavesDisk(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	up := newRawUpstream(t)
	upURL := "http://" + up.ln.Addr().String()
	for _, c := range []struct {
		name string
		args func(dir string) []string
		want string // in the error
	}{
		{"bad flag", func(dir string) []string {
			return []string{"--listen", freeAddr(t), "--upstream", upURL, "--session", "query:q", "--force"}
		}, "want header:NAME or cookie:NAME"},
		{"busy port", func(dir string) []string {
			return []string{"--listen", busy.Addr().String(), "--upstream", upURL, "--force"}
		}, "--listen"},
		{"busy port, forward, new CA", func(dir string) []string {
			return []string{"--forward", "--listen", busy.Addr().String(), "--ca-out", filepath.Join(dir, "ca"), "--force"}
		}, "--listen"},
		{"CA key missing", func(dir string) []string {
			return []string{"--forward", "--listen", freeAddr(t), "--ca-cert", filepath.Join(dir, "rec.jsonl"), "--ca-key", filepath.Join(dir, "nokey.pem"), "--force"}
		}, "--ca-"},
		{"existing file, no --force", func(dir string) []string {
			return []string{"--listen", freeAddr(t), "--upstream", upURL}
		}, "the file exists"},
		{"every address, no --allow-remote", func(dir string) []string {
			return []string{"--forward", "--listen", "0.0.0.0:0", "--ca-out", filepath.Join(dir, "ca"), "--force"}
		}, "--allow-remote"},
		{"bad --allow-upstream", func(dir string) []string {
			return []string{"--forward", "--listen", freeAddr(t), "--ca-out", filepath.Join(dir, "ca"), "--allow-upstream", "localhost", "--force"}
		}, "--allow-upstream"},
		{"bad --redact", func(dir string) []string {
			return []string{"--listen", freeAddr(t), "--upstream", upURL, "--redact", "all", "--force"}
		}, "--redact"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "rec.jsonl")
			prev := strings.Repeat(`{"http":{"req":{"method":"GET","uri":"/kept","host":"svc"}}}`+"\n", 300)
			if err := os.WriteFile(rec, []byte(prev), 0o640); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, dir)
			args := append([]string{"record", "-o", rec, "--duration", "1ms"}, c.args(dir)...)
			r := runMain(t, context.Background(), "", args...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("got exit %d %q, want a refusal naming %q", r.code, r.stderr, c.want)
			}
			after := dirState(t, dir)
			if got, want := sortedKeys(after), sortedKeys(before); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("files after: got %v, want %v", got, want)
			}
			if after["rec.jsonl"] != before["rec.jsonl"] {
				t.Errorf("rec.jsonl changed: got %d bytes, want %d as they were", len(after["rec.jsonl"]), len(before["rec.jsonl"]))
			}
		})
	}
}

// TestRecordFileWholeAnd0600: a recording is created 0600 and appears
// only when recording stops (no -o file while it runs, only a hidden
// temporary beside it); --force replaces an existing file, --append adds
// to it, keeping its lines; and --redact credentials is the default.
func TestRecordFileWholeAnd0600(t *testing.T) {
	up := newRawUpstream(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	record := func(extra ...string) {
		t.Helper()
		addr := freeAddr(t)
		before, _ := os.ReadFile(rec)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan runResult)
		go func() {
			args := append([]string{"record", "--listen", addr, "--upstream", "http://" + up.ln.Addr().String(), "-o", rec, "--log-level", "warn"}, extra...)
			var out, errb strings.Builder
			done <- runResult{Main(ctx, args, strings.NewReader(""), &out, &errb), out.String(), errb.String()}
		}()
		var res *http.Response
		for i := 0; i < 200; i++ {
			req, _ := http.NewRequest("GET", "http://"+addr+"/p", nil)
			req.Header.Set("Authorization", "Bearer hunter2")
			req.Header.Set("Cookie", "sid=s3cret; theme=dark")
			req.Header.Set("X-Api-Key", "k3y")
			var err error
			if res, err = http.DefaultClient.Do(req); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if res == nil {
			t.Fatal("the recorder did not start")
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		time.Sleep(250 * time.Millisecond) // past the writer's flush
		if b, _ := os.ReadFile(rec); string(b) != string(before) {
			t.Error("-o's file changed while recording, want it put in place only once stopped")
		}
		stop()
		if r := <-done; r.code != 0 {
			t.Fatalf("record: exit %d: %s", r.code, r.stderr)
		}
	}
	record()
	fi, err := os.Stat(rec)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("recording mode: got %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(rec)
	for _, secret := range []string{"hunter2", "s3cret", "k3y"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the recording holds %q, want credentials redacted by default:\n%s", secret, b)
		}
	}
	for _, kept := range []string{`"Authorization":["Bearer REDACTED"]`, `"Cookie":["sid=REDACTED; theme=REDACTED"]`, `"X-Api-Key":["REDACTED"]`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("the recording lacks %s:\n%s", kept, b)
		}
	}
	record("--append", "--redact", "none")
	b2, _ := os.ReadFile(rec)
	if !strings.HasPrefix(string(b2), string(b)) || strings.Count(string(b2), "\n") != 2 || !strings.Contains(string(b2), "hunter2") {
		t.Errorf("--append --redact none: got\n%s\nwant the first line kept and a second one, unredacted", b2)
	}
	record("--force")
	b3, _ := os.ReadFile(rec)
	if strings.Count(string(b3), "\n") != 1 {
		t.Errorf("--force: got %d lines, want 1 (the file replaced)", strings.Count(string(b3), "\n"))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("got %d files in the directory, want 1 (no temporary left)", len(ents))
	}
}
