#!/usr/bin/env bash
# mockbench.sh BIN — replay mock's answers a second (make mockbench; not run
# in CI). It writes a 100,000-pair file of OUT pairs with JSON request and
# answer bodies (100,000 signatures) and a wrk script of 1,000 of its POSTs
# (JSON keys in another order, as a live client writes them) outside the
# repository, starts the mock pinned to one core (taskset -c 0, --latency
# 0), drives it with wrk on another (-t1 -c50, keep-alive), and prints the
# answers a second, the time to serving, the resident memory, and the
# hits and misses of the mock's --out report (every answer must be a hit).
# Env: DUR=15s PORT=18080 WORK=<dir, default a fresh /tmp dir>
set -euo pipefail
BIN=${1:?usage: mockbench.sh path/to/replay}
DUR=${DUR:-15s}
PORT=${PORT:-18080}
WORK=${WORK:-$(mktemp -d /tmp/replay-mockbench.XXXXXX)}
for tool in wrk taskset python3; do
  command -v "$tool" >/dev/null || { echo "mockbench: $tool is not installed" >&2; exit 1; }
done
mkdir -p "$WORK"
MOCK_PID=""
cleanup() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

if [ ! -s "$WORK/big.jsonl" ]; then
  python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
with open(work + "/big.jsonl", "w") as f:
    for i in range(100000):
        body = json.dumps({"id": i, "name": "item-%d" % i, "tags": ["a", "b"], "price": 12.5, "customer": {"id": "cus_%d" % (i % 977), "tier": "gold"}}, separators=(",", ":"))
        res = json.dumps({"id": i, "status": "ok", "total": 12.5, "items": [{"sku": "s-%d" % i, "qty": 1}], "note": "x" * 80}, separators=(",", ":"))
        f.write(json.dumps({"ts": "2026-11-01T10:00:00Z", "duration": 3, "l7protocol": "http", "direction": "OUT",
                            "http": {"req": {"method": "POST", "uri": "/v1/items/%d?page=%d" % (i % 1000, i % 10), "host": "api.internal",
                                             "headers": {"Content-Type": ["application/json"]}, "body": body},
                                     "res": {"statusCode": 200, "headers": {"Content-Type": ["application/json"]}, "body": res}}},
                           separators=(",", ":")) + "\n")
with open(work + "/post.lua", "w") as f:
    f.write("local reqs = {}\nlocal n = 0\ninit = function(args)\n")
    for i in range(0, 100000, 100):
        body = json.dumps({"customer": {"tier": "gold", "id": "cus_%d" % (i % 977)}, "price": 12.5, "tags": ["a", "b"], "name": "item-%d" % i, "id": i}, separators=(", ", ": "))
        f.write('  reqs[#reqs+1] = wrk.format("POST", "/v1/items/%d?page=%d", {["Content-Type"]="application/json"}, %s)\n' % (i % 1000, i % 10, json.dumps(body)))
    f.write("end\nrequest = function()\n  n = n % #reqs + 1\n  return reqs[n]\nend\n")
PY
fi

start=$(date +%s%N)
taskset -c 0 "$BIN" mock -f "$WORK/big.jsonl" --listen "127.0.0.1:$PORT" --latency 0 -q --out "$WORK/report.json" --log-format json 2>"$WORK/mock.log" &
MOCK_PID=$!
until grep -q serving "$WORK/mock.log" 2>/dev/null; do
  kill -0 "$MOCK_PID" 2>/dev/null || { cat "$WORK/mock.log" >&2; exit 1; }
  sleep 0.02
done
echo "serving after $(( ($(date +%s%N) - start) / 1000000 )) ms; load average $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 1 wrk -t1 -c50 -d"$DUR" -s "$WORK/post.lua" "http://127.0.0.1:$PORT/" | grep -E "Requests/sec|requests in|Non-2xx"
echo "resident: $(ps -o rss= -p "$MOCK_PID") KiB"
kill -TERM "$MOCK_PID"
wait "$MOCK_PID" 2>/dev/null || true
MOCK_PID=""
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('mock: %d requests, %d hits, %d misses' % (r['requests'], r['hits'], r['misses']))" "$WORK/report.json"
