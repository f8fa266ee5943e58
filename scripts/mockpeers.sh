#!/usr/bin/env bash
# mockpeers.sh BIN — replay mock against Hoverfly on the same 1,000 recorded
# JSON exchanges (make mockpeers; not run in CI). It writes, outside the
# repository, the exchanges as a traffic file for the mock and as a
# Hoverfly simulation (the same requests, the same answers), installs
# Hoverfly into a temporary GOBIN (built from the downloaded module when
# go install is refused; skipped, with a message, when it will not
# install), and drives each server, pinned to one CPU (taskset -c 0),
# closed loop from another (taskset -c 1): HTTP/1.1 keep-alive with wrk,
# cleartext HTTP/2 by prior knowledge (h2c) with h2load, one stream a
# connection and ten (-m 10), where the server speaks it (Hoverfly does
# not). It prints one Markdown table: answers a second, and the server's
# CPU an answer (utime+stime of /proc/PID/stat before and after the run).
# Env: DUR=10 (s) CONNS=50 PORT=18090 HOVERFLY_VERSION=v1.12.10
#      WORK=<dir, default a fresh /tmp dir>
set -euo pipefail
BIN=${1:?usage: mockpeers.sh path/to/replay}
DUR=${DUR:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18090}
ADMIN=$((PORT + 1))
HOVERFLY_VERSION=${HOVERFLY_VERSION:-v1.12.10}
WORK=${WORK:-$(mktemp -d /tmp/replay-mockpeers.XXXXXX)}
for tool in wrk h2load taskset python3 curl go; do
  command -v "$tool" >/dev/null || { echo "mockpeers: $tool is not installed" >&2; exit 1; }
done
[[ $DUR =~ ^[0-9]+$ && $DUR -ge 1 ]] || { echo "mockpeers: DUR must be a whole number of seconds, got $DUR" >&2; exit 1; }
mkdir -p "$WORK"
CLK_TCK=$(getconf CLK_TCK)
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

# The exchanges: GET /v1/items/N answered 200 with a JSON body, as a
# traffic file, a Hoverfly simulation, a wrk script and h2load's URIs.
python3 - "$WORK" "$PORT" "$HOVERFLY_VERSION" <<'PY'
import json, sys
work, port, hv = sys.argv[1], sys.argv[2], sys.argv[3]
pairs = []
with open(work + "/traffic.jsonl", "w") as f:
    for i in range(1000):
        uri = "/v1/items/%d" % i
        body = json.dumps({"id": i, "name": "item-%d" % i, "status": "ok", "price": 12.5 + i,
                           "tags": ["a", "b"], "customer": {"id": "cus_%d" % (i % 97), "tier": "gold"}, "note": "x" * 80},
                          separators=(",", ":"))
        f.write(json.dumps({"ts": "2026-11-01T10:00:00Z", "duration": 1, "l7protocol": "http", "direction": "OUT",
                            "http": {"req": {"method": "GET", "uri": uri, "host": "api.internal", "headers": {"Accept": ["application/json"]}},
                                     "res": {"statusCode": 200, "headers": {"Content-Type": ["application/json"]}, "body": body}}},
                           separators=(",", ":")) + "\n")
        pairs.append({"request": {"method": [{"matcher": "exact", "value": "GET"}], "path": [{"matcher": "exact", "value": uri}]},
                      "response": {"status": 200, "body": body, "encodedBody": False, "templated": False,
                                   "headers": {"Content-Type": ["application/json"]}}})
with open(work + "/simulation.json", "w") as f:
    json.dump({"data": {"pairs": pairs, "globalActions": {"delays": [], "delaysLogNormal": []}},
               "meta": {"schemaVersion": "v5.2", "hoverflyVersion": hv, "timeExported": "2026-11-01T10:00:00Z"}}, f)
with open(work + "/get.lua", "w") as f:
    f.write("local n = 0\nrequest = function()\n  n = n % 1000\n  local r = wrk.format(\"GET\", \"/v1/items/\" .. n, {[\"Accept\"]=\"application/json\"})\n  n = n + 1\n  return r\nend\n")
with open(work + "/uris.txt", "w") as f:
    for i in range(1000):
        f.write("http://127.0.0.1:%s/v1/items/%d\n" % (port, i))
PY

# cpu_ticks PID: the process's utime+stime, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wait_serving URL: until the server answers the first exchange.
wait_serving() {
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" 2>/dev/null)" = 200 ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

ROWS=()
# measure NAME PROTO: one closed-loop run against the server SERVER_PID
# on PORT, and a row of the table.
measure() {
  local name=$1 proto=$2 out before after rps n errs
  out=$WORK/$(printf '%s-%s' "$name" "$proto" | tr -c 'A-Za-z0-9.-' '_').out
  before=$(cpu_ticks "$SERVER_PID")
  case $proto in
    http/1.1)
      taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$WORK/get.lua" "http://127.0.0.1:$PORT/" >"$out" 2>&1
      rps=$(awk '/^Requests\/sec:/{print $2}' "$out")
      n=$(awk '/requests in/{print $1}' "$out")
      errs=$(awk '/Non-2xx/{print $5} /Socket errors/{print $4+$6+$8+$10}' "$out" | awk '{s+=$1} END{print s+0}') ;;
    h2c*)
      local m=1; [ "$proto" = "h2c -m 10" ] && m=10
      taskset -c 1 h2load -t 1 -c "$CONNS" -m "$m" -D "$DUR" -i "$WORK/uris.txt" >"$out" 2>&1
      rps=$(awk '/^finished in/{print $4}' "$out")
      n=$(awk '/^requests:/{gsub(/,/,""); print $8}' "$out")
      errs=$(awk '/^requests:/{gsub(/,/,""); print $10}' "$out") ;;
  esac
  after=$(cpu_ticks "$SERVER_PID")
  local us="n/a"
  [ "${n:-0}" -gt 0 ] && us=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" -v n="$n" 'BEGIN{printf "%.1f", t / hz * 1e6 / n}')
  ROWS+=("| $name | $proto | ${rps:-n/a} | $us | ${n:-n/a} | ${errs:-n/a} |")
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# replay mock: HTTP/1.1 and h2c on the same port.
taskset -c 0 "$BIN" mock -f "$WORK/traffic.jsonl" --listen "127.0.0.1:$PORT" --latency 0 -q >"$WORK/mock.log" 2>&1 &
SERVER_PID=$!
wait_serving "http://127.0.0.1:$PORT/v1/items/0" || { cat "$WORK/mock.log" >&2; echo "mockpeers: replay mock did not start" >&2; exit 1; }
for proto in http/1.1 h2c "h2c -m 10"; do measure "replay mock" "$proto"; sleep 1; done
cleanup; SERVER_PID=""

# Hoverfly, as a web server (no proxy) on the simulation, logging errors
# only: by default it logs every request it answers, and the mock none.
NOTE=""
GOBIN_DIR=$WORK/gobin
# go install lists the module's versions first (for a deprecation notice),
# which a module proxy may refuse while it serves the version itself: when
# it fails, the module is downloaded and its command built where it lies.
install_hoverfly() {
  local mod=github.com/SpectoLabs/hoverfly dir
  (cd "$WORK" && GOBIN=$GOBIN_DIR GOFLAGS= go install "$mod/core/cmd/hoverfly@$HOVERFLY_VERSION") && return 0
  echo "mockpeers: go install failed; building Hoverfly from the downloaded module"
  dir=$(cd "$WORK" && GOFLAGS= go mod download -json "$mod@$HOVERFLY_VERSION" | awk -F'"' '$2 == "Dir" {print $4}')
  [ -n "$dir" ] && (cd "$dir" && GOFLAGS= go build -mod=mod -o "$GOBIN_DIR/hoverfly" ./core/cmd/hoverfly)
}
if [ ! -x "$GOBIN_DIR/hoverfly" ] && ! install_hoverfly >"$WORK/hoverfly-install.log" 2>&1; then
  NOTE="Hoverfly $HOVERFLY_VERSION did not install ($(tail -n 2 "$WORK/hoverfly-install.log" | tr -s '\n\t' '  ' | cut -c1-300)); its rows are left out."
else
  taskset -c 0 "$GOBIN_DIR/hoverfly" -webserver -pp "$PORT" -ap "$ADMIN" -import "$WORK/simulation.json" -log-level error >"$WORK/hoverfly.log" 2>&1 &
  SERVER_PID=$!
  if wait_serving "http://127.0.0.1:$PORT/v1/items/0"; then
    measure "Hoverfly $HOVERFLY_VERSION" http/1.1
    ROWS+=("| Hoverfly $HOVERFLY_VERSION | h2c | - | - | - | does not speak h2c |")
  else
    NOTE="Hoverfly did not start (its log: $WORK/hoverfly.log); its rows are left out."
  fi
  cleanup; SERVER_PID=""
fi

echo "mockpeers: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load average $LOAD_BEFORE before and $(cut -d' ' -f1-3 /proc/loadavg) after; ${DUR}s a run, $CONNS connections; server on CPU 0, client on CPU 1"
echo
echo "| server | protocol | answers/s | server CPU µs/answer | answers | errors |"
echo "|---|---|--:|--:|--:|--:|"
printf '%s\n' "${ROWS[@]}"
[ -n "$NOTE" ] && { echo; echo "$NOTE"; }
exit 0
