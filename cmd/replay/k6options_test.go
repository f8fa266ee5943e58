package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// k6 itself is not installed on the project's machines (its licence, the
// AGPL, keeps it off them), so the tests that run an exported script in
// k6 skip, saying so. What k6 refused in the field (`rate: 198.02`: "cannot
// unmarshal number 198.02 into int64", exit 104) is a script whose
// options k6's Go types cannot hold; this file checks exactly that
// without k6: node loads the script as k6's init stage does (an ES module,
// its k6 imports resolved to inert stand-ins, open() reading beside it)
// and prints its options, and each option is checked against the type
// k6 unmarshals it into (whole numbers for counts and rates, k6 durations
// for times).

// k6Hooks resolves k6's modules to a stand-in whose every name is inert:
// the script's init code (its imports, SharedArray over open(), options)
// runs as written; no request is sent.
const k6Hooks = `
const stub = ` + "`" + `
const inert = new Proxy(function () {}, { get: (t, k) => k === Symbol.toPrimitive ? () => '' : inert, apply: () => inert, construct: () => inert });
export default inert;
export const check = inert, sleep = inert, fail = inert, group = inert;
export const Counter = inert, Trend = inert, Rate = inert, Gauge = inert;
export class SharedArray { constructor(name, fn) { const a = fn(); if (!Array.isArray(a)) throw new Error('SharedArray ' + name + ': the function returned no array'); return a; } }
export const WebSocket = globalThis.k6WebSocket ?? inert; // k6/websockets: a peer of the test's when it plays one
` + "`" + `;
export async function resolve(specifier, context, next) {
  if (specifier === 'k6' || specifier.startsWith('k6/')) return { url: 'k6stub:' + specifier, shortCircuit: true };
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.startsWith('k6stub:')) return { format: 'module', source: stub, shortCircuit: true };
  return next(url, context);
}
`

// k6Main loads the script named in argv and prints its options as JSON.
const k6Main = `
import { register } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
register('./hooks.mjs', import.meta.url);
const script = resolve(process.argv[2]);
globalThis.open = (p) => readFileSync(resolve(dirname(script), p), 'utf8');
globalThis.__ENV = process.env;
globalThis.__VU = 0;
if (process.env.K6_WS_PLAY) globalThis.k6WebSocket = wsPeer(JSON.parse(process.env.K6_WS_PLAY));
const m = await import(pathToFileURL(script).href);
if (typeof m.default !== 'function') throw new Error('no default function');
if (process.env.K6_WS_PLAY) {
  await m.default(); // one iteration, its sessions played by the peer
  process.stdout.write(JSON.stringify({ ws_log: globalThis.wsLog }));
} else {
  process.stdout.write(JSON.stringify(m.options ?? null));
}

// wsPeer is a stand-in for k6's WebSocket playing the server's side of a
// recorded session (its messages, from 'client' or 'server'): the server
// messages due after each client message are sent when it comes, and
// what went each way is logged in the order it went.
function wsPeer(rec) {
  globalThis.wsLog = [];
  const later = (f) => setTimeout(f, 1);
  return class {
    constructor(url) { this.i = 0; wsLog.push('open ' + url); later(() => { this.onopen?.(); this.serve(); }); }
    serve() {
      while (this.i < rec.length && rec[this.i].from === 'server') {
        const m = rec[this.i++];
        if (m.close) { wsLog.push('server close ' + m.code); later(() => this.onclose?.()); return; }
        wsLog.push('server ' + m.data);
        later(() => this.onmessage?.({ data: m.data }));
      }
    }
    send(d) { this.i++; wsLog.push('client ' + (typeof d === 'string' ? d : 'binary')); later(() => this.serve()); }
    close(code) { wsLog.push('client close ' + (code ?? '')); later(() => this.onclose?.()); }
  };
}
`

// findNode finds node. Missing, the test skips loudly, or fails under
// REPLAY_CI=1 (.ci/run installs it).
func findNode(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	if os.Getenv("REPLAY_CI") == "1" {
		t.Fatal("node is not installed, and REPLAY_CI=1: .ci/run installs it (Debian's nodejs)")
	}
	t.Skip("SKIPPED: node is not installed (Debian's nodejs); the exported scripts' options were not loaded")
	return ""
}

// k6Options loads script as k6's init stage would, with env added to the
// environment (__ENV), and returns its options.
func k6Options(t *testing.T, node, script string, env ...string) map[string]any {
	t.Helper()
	out := k6Node(t, node, script, env...)
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var opts map[string]any
	if err := dec.Decode(&opts); err != nil {
		t.Fatalf("%s: options %q: %v", filepath.Base(script), out, err)
	}
	return opts
}

// k6Node loads script in node as k6's init stage does, with env added to
// the environment, and returns what main.mjs printed: the options, or
// with K6_WS_PLAY the log of the sessions one iteration played.
func k6Node(t *testing.T, node, script string, env ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{"hooks.mjs": k6Hooks, "main.mjs": k6Main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The script is an ES module: node takes it as one under .mjs.
	mjs := strings.TrimSuffix(script, ".js") + ".mjs"
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mjs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "main.mjs"), mjs)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node could not load %s as k6's init stage does: %v\n%s", filepath.Base(script), err, stderr.String())
	}
	return out
}

// k6Ints are the options k6 unmarshals into integers (int64, or null.Int),
// at the top level, in a scenario or in a stage.
var k6Ints = map[string]bool{"vus": true, "iterations": true, "rate": true, "startRate": true, "preAllocatedVUs": true,
	"maxVUs": true, "startVUs": true, "target": true}

// k6Durations are the options k6 reads as durations ("30s", "1m30s", or a
// number of milliseconds).
var k6Durations = map[string]bool{"duration": true, "timeUnit": true, "gracefulStop": true, "gracefulRampDown": true,
	"startTime": true, "maxDuration": true}

var k6DurationRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))+$`)

// checkK6Types reports each option of opts (under path) whose value the
// type k6 reads it into cannot hold.
func checkK6Types(path string, v any) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := path + "." + k
			if n, ok := x.(json.Number); ok && k6Ints[k] {
				if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
					bad = append(bad, p+" = "+n.String()+": k6 wants a whole number (int64)")
				}
				continue
			}
			if k6Durations[k] {
				switch d := x.(type) {
				case string:
					if !k6DurationRE.MatchString(d) {
						bad = append(bad, p+" = "+strconv.Quote(d)+": k6 wants a duration such as 30s or 1m30s")
					}
				case json.Number:
					if _, err := strconv.ParseInt(d.String(), 10, 64); err != nil {
						bad = append(bad, p+" = "+d.String()+": k6 wants a duration or whole milliseconds")
					}
				}
				continue
			}
			bad = append(bad, checkK6Types(p, x)...)
		}
	case []any:
		for i, x := range v {
			bad = append(bad, checkK6Types(path+"["+strconv.Itoa(i)+"]", x)...)
		}
	}
	return bad
}

// TestExportK6OptionsLoad: the scripts replay exports for every load
// model and every unit of rate load as k6's init stage loads them, and
// every option has the type k6 reads it into. The rates of the issue
// (1200req/s of the demo's 6.06 requests an iteration: 198.02/s; 150/m:
// 2.5/s) were written as fractions before, which k6 refuses.
func TestExportK6OptionsLoad(t *testing.T) {
	t.Parallel()
	node := findNode(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"rate 40/s", []string{"--rate", "40/s", "--duration", "2s"}},
		{"rate 150/m", []string{"--rate", "150/m", "--duration", "2s"}},
		{"rate 1200req/s", []string{"--rate", "1200req/s", "--duration", "2s"}},
		{"rate stages in requests", []string{"--rate", "100req/s", "--stages", "100req/s@2s,250req/s@2s,30s:1200req/s"}},
		{"rate stages per minute", []string{"--stages", "90/m@1m,150/m@1m"}},
		{"VUs", []string{"--vus", "5", "--duration", "2s"}},
		{"VU stages", []string{"--vus", "5", "--stages", "3@2s,7@2s"}},
		{"iterations", []string{"--vus", "3", "--iterations", "10"}},
		{"transforms", []string{"--rate", "50/s", "--duration", "2s", "--transforms", "../../testdata/demo-transforms.yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			script := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(tt.name)+".js")
			args := append([]string{"export", "k6", "-f", "../../testdata/demo.jsonl", "--target", "http://127.0.0.1:8080", "-o", script}, tt.args...)
			if r := runMain(t, context.Background(), "", args...); r.code != 0 {
				t.Fatalf("export %v: exit %d: %s", tt.args, r.code, r.stderr)
			}
			opts := k6Options(t, node, script, "REPLAY_JWT_KEY=replay-demo-secret") // the demo's HS256 key
			if opts["scenarios"] == nil {
				t.Fatalf("options %v: no scenarios", opts)
			}
			for _, b := range checkK6Types("options", opts) {
				t.Error(b)
			}
		})
	}
}

// TestK6TypesCatchWhatK6Refused: the check refuses what k6 refused in the
// field, so that TestExportK6OptionsLoad cannot pass by checking nothing.
func TestK6TypesCatchWhatK6Refused(t *testing.T) {
	var opts map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"scenarios":{"replay":{"executor":"constant-arrival-rate","rate":198.02,"timeUnit":"1s","duration":"2s","preAllocatedVUs":100,"stages":[{"duration":"30 s","target":2.5}]}}}`))
	dec.UseNumber()
	if err := dec.Decode(&opts); err != nil {
		t.Fatal(err)
	}
	bad := strings.Join(checkK6Types("options", opts), "\n")
	for _, want := range []string{"options.scenarios.replay.rate = 198.02", "stages[0].target = 2.5", `stages[0].duration = "30 s"`} {
		if !strings.Contains(bad, want) {
			t.Errorf("the check missed %s; it said:\n%s", want, bad)
		}
	}
}
