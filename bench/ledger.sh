#!/usr/bin/env bash
# Charged queries per second on the budget ledgers (issue 15): one dpproxy
# on the embedded SQLite ledger, one on a shared PostgreSQL ledger, and
# three sharing it, with the same clients spread over them; and ledger
# transactions per charge. Every query has distinct text (no cache hit) and
# is charged. Prints a Markdown table and writes bench/results/ledger.jsonl.
#
#   bash bench/ledger.sh                  # 48 clients, 8 s runs, 3 runs each
#   bash bench/ledger.sh --clients 96 --duration 10s --runs 5
#   bash bench/ledger.sh --only shared-3     # one setup (embedded-1, shared-1, shared-3)
#   KEEP_LOGS=DIR bash bench/ledger.sh       # keep the proxies' and PostgreSQL's logs
#
# Needs PostgreSQL 15's server binaries (/usr/lib/postgresql/15/bin, or
# PG_BIN); starts a throwaway cluster (fsync on: the ledger's durability
# is what is measured) and removes it on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CLIENTS=48
DURATION=8s
RUNS=3
SETUPS="embedded-1 shared-1 shared-3"
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) CLIENTS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --only) SETUPS=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
log() { printf '==> [%4ds] %s\n' "$SECONDS" "$*" >&2; }
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then PG_USER=postgres; fi
run_pg() { if [ "$(id -un)" = "$PG_USER" ]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK=$(mktemp -d /tmp/dpproxy-ledger-bench.XXXXXX)
chown "$PG_USER" "$WORK" 2>/dev/null || true
PIDS=()
cleanup() {
  if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS"; cp "$WORK"/*.log "$KEEP_LOGS"/ 2>/dev/null || true; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  run_pg "$PG_BIN/pg_ctl" -D "$WORK/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

log "building dpproxy and loadgen"
mkdir -p "$WORK/bin"
go build -o "$WORK/bin/dpproxy" ./cmd/dpproxy
go build -o "$WORK/bin/loadgen" ./bench/loadgen
PG_PORT=$(free_port)
log "starting PostgreSQL 15 on 127.0.0.1:$PG_PORT"
run_pg "$PG_BIN/initdb" -D "$WORK/pg" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
run_pg "$PG_BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w \
  -o "-p $PG_PORT -k $WORK -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null
PSQL=(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -X -q -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c "CREATE DATABASE data" -c "CREATE DATABASE ledger"
DATA_DSN="postgres://postgres@127.0.0.1:$PG_PORT/data?sslmode=disable"
LEDGER_DSN="postgres://postgres@127.0.0.1:$PG_PORT/ledger?sslmode=disable"
log "loading 10,000 patients"
"$WORK/bin/loadgen" load --dsn "$DATA_DSN" --patients 10000 >/dev/null

VERIFIERS=$(printf 'bench\n' | "$WORK/bin/dpproxy" passwd --password-stdin 2>/dev/null)
write_policy() { # write_policy FILE PORT LEDGER-YAML
  {
    cat <<EOF
listen:
  postgres: 127.0.0.1:$2
  idle_timeout: 1h
  max_connections: 500
backend:
  kind: postgres
  dsn: "$DATA_DSN"
  max_conns: 16
ledger:
$3
cache:
  size: 0
defaults:
  epsilon: 0.001
analysts:
  - name: bench
$VERIFIERS
    budget:
      epsilon: 1e12
      delta: 0.5
EOF
    sed -n '/^protected_tables:/,$p' cmd/dpproxy/demo_policy.yaml
  } >"$1"
}
PORTS=()
start_proxies() { # start_proxies N LEDGER-YAML
  PORTS=()
  for i in $(seq 1 "$1"); do
    local port
    port=$(free_port)
    write_policy "$WORK/p$i.yaml" "$port" "$2"
    "$WORK/bin/dpproxy" serve --config "$WORK/p$i.yaml" >"$WORK/p$i.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 300); do grep -q 'dpproxy listening' "$WORK/p$i.log" && break; sleep 0.1; done
    grep -q 'dpproxy listening' "$WORK/p$i.log" || { cat "$WORK/p$i.log" >&2; exit 1; }
    PORTS+=("$port")
  done
}
stop_proxies() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
Q='SELECT COUNT(*) FROM patients WHERE patient_id = {i}'
OUT=bench/results/ledger.jsonl
: >"$OUT"
measure() { # measure NAME: the runs, then the proxies' ledger counters
  local args=()
  for port in "${PORTS[@]}"; do args+=(--dsn "postgres://bench:bench@127.0.0.1:$port/demo?sslmode=disable"); done
  for r in $(seq 1 "$RUNS"); do
    local res
    res=$("$WORK/bin/loadgen" run "${args[@]}" --query "$Q" --clients "$CLIENTS" --duration "$DURATION")
    echo "{\"setup\":\"$1\",\"run\":$r,\"result\":$res}" >>"$OUT"
    log "$1 run $r: $res"
  done
  stop_proxies
  # Each proxy logs its ledger's charges and transactions when it stops
  # (all runs and warm-ups together).
  local charges=0 txs=0
  for i in $(seq 1 "${#PORTS[@]}"); do
    local line
    line=$(grep 'msg="ledger closed"' "$WORK/p$i.log")
    charges=$(( charges + $(sed -E 's/.*charges=([0-9]+).*/\1/' <<<"$line") ))
    txs=$(( txs + $(sed -E 's/.*transactions=([0-9]+).*/\1/' <<<"$line") ))
  done
  echo "{\"setup\":\"$1\",\"ledger\":{\"charges\":$charges,\"transactions\":$txs}}" >>"$OUT"
  log "$1: $charges charges in $txs ledger transactions"
}

SHARED="  postgres: \"$LEDGER_DSN\""
for setup in $SETUPS; do
  case $setup in
    embedded-1) log "embedded SQLite ledger, 1 instance"; start_proxies 1 "  path: $WORK/ledger.db" ;;
    shared-1) log "shared PostgreSQL ledger, 1 instance"; start_proxies 1 "$SHARED" ;;
    shared-3) log "shared PostgreSQL ledger, 3 instances"; start_proxies 3 "$SHARED" ;;
    *) echo "unknown setup $setup" >&2; exit 2 ;;
  esac
  measure "$setup"
done

python3 - "$OUT" "$CLIENTS" "$DURATION" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by, ledger = {}, {}
for r in rows:
    if "ledger" in r:
        ledger[r["setup"]] = r["ledger"]
    else:
        by.setdefault(r["setup"], []).append(r["result"])
print(f"\n{sys.argv[2]} clients, {sys.argv[3]} runs, median (min–max) of {len(next(iter(by.values())))} runs; nproc = ", end="")
import os; print(os.cpu_count())
print("\n| ledger, instances | charged queries/s | p50 latency (ms) | ledger transactions per charge | errors |")
print("|---|---|---|---|---|")
base = None
for name in ["embedded-1", "shared-1", "shared-3"]:
    rs = by.get(name, [])
    if not rs: continue
    q = [r["qps"] for r in rs]
    l = ledger.get(name, {})
    tpc = [l["transactions"] / l["charges"]] if l.get("charges") else []
    if name == "shared-1": base = statistics.median(q)
    ratio = f" ({statistics.median(q)/base:.2f}× one)" if name == "shared-3" and base else ""
    print(f"| {name} | {statistics.median(q):.0f} ({min(q):.0f}–{max(q):.0f}){ratio} | {statistics.median([r['p50_us'] for r in rs])/1000:.2f} | {statistics.median(tpc) if tpc else float('nan'):.3f} | {sum(r['errors'] for r in rs)} |")
EOF
