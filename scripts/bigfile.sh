#!/usr/bin/env bash
# bigfile.sh BIN — the memory and open-time check of a large traffic file
# (make bigfile; not run in CI). It writes a ~1 GiB RRPair file of ~400-byte
# lines outside the repository, starts the demo SUT on loopback, replays the
# file with 500 VUs (re-signing its tokens and shifting its times, as the
# demo SUT wants), and reports:
#   - open + validate time with a warm page cache (target: < 3 s per GiB)
#   - peak anonymous memory of the replay process, RssAnon: the mapped file
#     is not counted, it is page cache (target: < 150 MiB)
# Env: SIZE_MB=1024 VUS=500 DUR=20s PORT=18481 WORK=<dir, default a fresh /tmp dir>
set -euo pipefail
BIN=${1:?usage: bigfile.sh path/to/replay}
SIZE_MB=${SIZE_MB:-1024}
VUS=${VUS:-500}
DUR=${DUR:-20s}
PORT=${PORT:-18481}
WORK=${WORK:-$(mktemp -d /tmp/replay-bigfile.XXXXXX)}
mkdir -p "$WORK"
FILE=$WORK/big.jsonl
SUT_PID=""
cleanup() { [ -n "$SUT_PID" ] && kill "$SUT_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

if [ ! -s "$FILE" ]; then
  echo "writing $SIZE_MB MiB of traffic to $FILE"
  python3 - "$FILE" "$SIZE_MB" <<'PY'
import sys, json, hmac, hashlib, base64
path, size = sys.argv[1], int(sys.argv[2]) << 20
kinds = ["page_view", "click", "add_to_cart", "checkout"]
# A bearer token as recorded: HS256 with the demo SUT's key, valid for an
# hour either side of the recording and long expired now. The run re-signs
# it (--jwt-secret) and shifts the events' times (--shift-time), so that
# the demo SUT accepts them.
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")
signed = b64(b'{"alg":"HS256"}') + b"." + b64(b'{"iat":1793523600,"exp":1793530800}')
token = (signed + b"." + b64(hmac.new(b"replay-demo-secret", signed, hashlib.sha256).digest())).decode()
with open(path, "w") as f:
    n = 0
    written = 0
    while written < size:
        body = json.dumps({"type": kinds[n % 4], "user_id": "u-%07d" % (n % 100000), "ts": 1793527200000 + n // 1000, "url": "/products/%d" % (n % 5000)})
        if n % 5 == 4:
            req = {"method": "GET", "uri": "/events/%d" % n, "host": "ingest.demo.local:8080",
                   "headers": {"Accept": ["application/json"], "User-Agent": ["shop-web/4.2"], "Authorization": ["Bearer " + token]}}
        else:
            req = {"method": "POST", "uri": "/events", "host": "ingest.demo.local:8080",
                   "headers": {"Content-Type": ["application/json"], "User-Agent": ["shop-web/4.2"], "Authorization": ["Bearer " + token]}, "body": body}
        line = json.dumps({"ts": "2026-11-01T10:%02d:%02d.%06dZ" % (n // 60000000, n // 1000000 % 60, n % 1000000),
                           "tags": {"session": "s-%d" % (n // 4)}, "http": {"req": req, "res": {"statusCode": 202}}}, separators=(",", ":")) + "\n"
        f.write(line)
        written += len(line)
        n += 1
print("lines:", n, "mean bytes per line:", written // n)
PY
fi
bytes=$(stat -c %s "$FILE")
cat "$FILE" > /dev/null   # warm the page cache

"$BIN" demo --serve "127.0.0.1:$PORT" --log-format json 2>"$WORK/sut.log" &
SUT_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done

"$BIN" run -f "$FILE" --target "http://127.0.0.1:$PORT" --vus "$VUS" --duration "$DUR" \
  --shift-time --jwt-secret replay-demo-secret --out "$WORK/summary.json" -q --log-format json 2>"$WORK/run.log" &
RUN_PID=$!
peak=0
while kill -0 "$RUN_PID" 2>/dev/null; do
  kb=$(awk '/^RssAnon:/{print $2}' "/proc/$RUN_PID/status" 2>/dev/null || echo 0)
  [ "${kb:-0}" -gt "$peak" ] && peak=$kb
  sleep 0.2
done
wait "$RUN_PID"

open_ms=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l)
    if d.get("message")=="replaying": print(d["opened_ms"])' "$WORK/run.log")
python3 - "$bytes" "$open_ms" "$peak" "$WORK/summary.json" <<'PY'
import json, sys
size, open_ms, peak_kb, summary = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = json.load(open(summary))
gib = size / (1 << 30)
per_gib = open_ms / 1000 / gib
print(f"file: {size/(1<<20):.0f} MiB; open+validate: {open_ms/1000:.2f} s ({per_gib:.2f} s/GiB, target < 3)")
print(f"peak RssAnon: {peak_kb/1024:.1f} MiB (target < 150)")
print(f"replayed: {s['requests']} requests, {s['rps']:.0f}/s, failed {s['failed']}, p99 {s['latency_ms']['p99']} ms")
ok = per_gib < 3 and peak_kb / 1024 < 150
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
