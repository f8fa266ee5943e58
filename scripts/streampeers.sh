#!/usr/bin/env bash
# streampeers.sh BIN — replay's HTTP/2 with several streams a connection
# against h2load's (make streampeers; not run in CI): a private nginx
# speaking cleartext HTTP/2 (h2c) pinned to one CPU (taskset -c 0), and,
# pinned to another (taskset -c 1), in turn, round after round:
#   h2load -c CONNS -m STREAMS                          (its streams a connection)
#   replay run --vus CONNS*STREAMS --streams STREAMS --h2c (the same wire)
# each closed loop for DUR seconds. It prints each run's requests a second
# and the generator's CPU-µs a request (user+system time from
# /usr/bin/time over requests done), then the medians of the rounds and
# of replay's ratio to h2load within each round.
# Env: DUR=8 (s) CONNS=50 STREAMS=10 ROUNDS=5 PORT=18095
#      WORK=<dir, default a fresh /tmp dir>
set -euo pipefail
BIN=${1:?usage: streampeers.sh path/to/replay}
DUR=${DUR:-8}
CONNS=${CONNS:-50}
STREAMS=${STREAMS:-10}
ROUNDS=${ROUNDS:-5}
PORT=${PORT:-18095}
WORK=${WORK:-$(mktemp -d /tmp/replay-streampeers.XXXXXX)}
for tool in nginx h2load taskset python3; do
  command -v "$tool" >/dev/null || { echo "streampeers: $tool is not installed" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "streampeers: /usr/bin/time is not installed (apt-get install time)" >&2; exit 1; }
for v in DUR CONNS STREAMS ROUNDS; do
  [[ ${!v} =~ ^[0-9]+$ && ${!v} -ge 1 ]] || { echo "streampeers: $v must be a whole number, at least 1, got ${!v}" >&2; exit 1; }
done
mkdir -p "$WORK/nginx"
NGINX_PID=""
cleanup() {
  if [ -n "$NGINX_PID" ]; then kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

cat > "$WORK/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  server {
    listen 127.0.0.1:$PORT http2 backlog=4096;
    keepalive_requests 100000000;   # else each connection ends after 1,000 (h2load does not reconnect)
    http2_max_concurrent_streams $((STREAMS * 2));
    location = / { default_type text/plain; return 200 "ok"; }
  }
}
EOF
taskset -c 0 nginx -c "$WORK/nginx.conf" -p "$WORK/nginx" 2>"$WORK/nginx.err" &
NGINX_PID=$!
for _ in $(seq 50); do
  h2load -n 1 "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break
  sleep 0.1
done
printf '{"http":{"req":{"method":"GET","uri":"/","host":"127.0.0.1:%s","version":"2","headers":{}}}}\n' "$PORT" > "$WORK/traffic.jsonl"

# run NAME cmd... — one generator on CPU 1 under /usr/bin/time; prints "USER SYS".
run() {
  local name=$1; shift
  timeout -k 5 $((DUR + 30)) taskset -c 1 /usr/bin/time -f '%U %S' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || true
}

echo "| round | h2load rps | h2load CPU-µs/req | replay rps | replay CPU-µs/req | replay ÷ h2load |"
echo "|--:|--:|--:|--:|--:|--:|"
: > "$WORK/rounds"
for r in $(seq "$ROUNDS"); do
  run "h2load-$r" h2load -t 1 -c "$CONNS" -m "$STREAMS" -D "$DUR" "http://127.0.0.1:$PORT/"
  run "replay-$r" "$BIN" run -f "$WORK/traffic.jsonl" --target "http://127.0.0.1:$PORT" --h2c \
    --vus $((CONNS * STREAMS)) --streams "$STREAMS" --duration "${DUR}s" -q --out "$WORK/replay-$r.json"
  python3 - "$WORK" "$r" "$DUR" <<'PY' | tee -a "$WORK/rounds"
import json, re, sys
work, r, dur = sys.argv[1], sys.argv[2], float(sys.argv[3])
def cpu(name):
    u, s = open(f"{work}/{name}.time").read().split()[-2:]
    return float(u) + float(s)
out = open(f"{work}/h2load-{r}.out").read()
m = re.search(r"requests: \d+ total, \d+ started, (\d+) done", out)
hreq = int(m.group(1)) if m else 0
m = re.search(r"finished in [^,]+, ([\d.]+) req/s", out)
hrps = float(m.group(1)) if m else 0
s = json.load(open(f"{work}/replay-{r}.json"))
rreq, failed = s["requests"], s["failed"]
m = re.search(r"requests: .* (\d+) failed", out)
hfailed = int(m.group(1)) if m else -1
if hreq == 0 or rreq == 0 or failed or hfailed:
    sys.exit(f"round {r}: h2load did {hreq} requests ({hfailed} failed), replay {rreq} ({failed} failed): see {work}")
h, p = cpu(f"h2load-{r}") * 1e6 / hreq, cpu(f"replay-{r}") * 1e6 / rreq
print(f"| {r} | {hrps:.0f} | {h:.2f} | {s['rps']:.0f} | {p:.2f} | {p / h:.2f} |")
PY
done
python3 - "$WORK/rounds" <<'PY'
import statistics, sys
rows = [[float(c) for c in l.strip("|\n").split("|")[1:]] for l in open(sys.argv[1]) if l.startswith("|")]
med = [statistics.median(col) for col in zip(*rows)]
print(f"| median | {med[0]:.0f} | {med[1]:.2f} | {med[2]:.0f} | {med[3]:.2f} | {med[4]:.2f} |")
PY
echo "(raw output in $WORK)"
