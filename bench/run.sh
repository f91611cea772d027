#!/usr/bin/env bash
# dpproxy benchmarks (issues 6 and 18): dpproxy's cost against direct
# PostgreSQL access and PgBouncer, and through its MySQL front end against
# direct MariaDB, measured as ratios in one run, the scale figures (clients,
# visits, idle connections), the floors and ceilings that show which
# targets this machine rules out (a bare Go relay and HAProxy, SELECT 1
# round trips, PostgreSQL alone on workload 5, and workload 5 with one
# text), plus the Go micro-benchmarks and the accuracy report. Writes
# bench/results/ and regenerates BENCHMARKS.md.
#
#   bash bench/run.sh                 # default: 100,000 patients (~2.1M visits), 5 runs
#   bash bench/run.sh --quick         # 10,000 patients, 3 short runs (CI-like)
#   bash bench/run.sh --scale 50000 --runs 5
#   (--accuracy-runs N: fresh runs per query and ε in the accuracy report, default 50 (200 quick);
#    --mysql-runs N: runs of the MariaDB workloads, default 3; --no-mysql skips them;
#    --visits-100m: workload 10 also at 100 million visits, generated into
#    PostgreSQL: ~24 GB of disk (22 GB measured after the load) and about
#    16 minutes more: 2,113 s in all on the 2-core development machine)
#
# Installs what it needs from Debian packages when missing (postgresql-15,
# postgresql-client-15, pgbouncer, mariadb-server, mariadb-client, and
# haproxy for workload 9's floor if it can; needs root or sudo for
# apt-get), starts a throwaway PostgreSQL cluster, PgBouncer, MariaDB,
# HAProxy and dpproxy instances on free loopback ports, and stops and
# removes all of them on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SCALE=
ACC_OVERRIDE=
QUICK=
RUNS=
MY_RUNS=
NO_MYSQL=
VISITS_100M=
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --scale=*) SCALE=${1#*=}; shift ;;
    --quick) QUICK=1; shift ;;
    --runs) RUNS=$2; shift 2 ;;
    --runs=*) RUNS=${1#*=}; shift ;;
    --accuracy-runs) ACC_OVERRIDE=$2; shift 2 ;;
    --mysql-runs) MY_RUNS=$2; shift 2 ;;
    --no-mysql) NO_MYSQL=1; shift ;;
    --visits-100m) VISITS_100M=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
# Workload 10 (scale): D_SCALE seconds per client count, one run each;
# SCALE_SIZES the visit counts generated (1m, 10m, 100m). --quick runs 1M
# visits only.
if [ -n "$QUICK" ]; then
  SCALE=${SCALE:-10000}; RUNS=${RUNS:-3}
  D_CACHE=3; D_CACHE1=2; D_PASS=3; D_LEDGER=4; W1_COUNT=5; W2K_COUNT=5; IDLE_HOLD=2; BENCHTIME=0.2s; ACC_RUNS=200; GB_COUNT=3
  D_SCALE=1; SCALE_SIZES="1m"
  D_FLOOR=1; D_MYPASS=2; D_W5DIRECT=2
else
  SCALE=${SCALE:-100000}; RUNS=${RUNS:-5}
  # The accuracy report's 50 fresh runs per query and ε (200 with
  # --accuracy-runs 200, about 15 minutes on 2 cores) and 3 counts of the
  # Go benchmarks at 0.3 s keep the whole run within 20 minutes, on a
  # fresh machine too (packages installed and modules fetched while Go
  # builds: 1,296 s with 60 runs, 0.5 s and the builds in turn; 1,063 s
  # after, with the packages installed and Go's build cache warm; 983 s on
  # a new machine whose run installed PgBouncer, HAProxy and MariaDB).
  D_CACHE=8; D_CACHE1=4; D_PASS=3; D_LEDGER=6; W1_COUNT=3; W2K_COUNT=8; IDLE_HOLD=3; BENCHTIME=0.3s; ACC_RUNS=50; GB_COUNT=3
  D_SCALE=3; SCALE_SIZES="1m 10m"
  # The floors and ceilings (issue 18: which targets this machine rules
  # out), about 120 s in all (paid for by 3 s instead of 5 per passthrough
  # target): workload 4 through the bare Go relay and through dpproxy on
  # one processor as long as through dpproxy, in every run (30 s each);
  # workload 9's passthrough through it and through HAProxy as long as
  # through dpproxy, D_MYPASS s each per protocol and run (36 s); SELECT 1
  # floors next to each 1-client cache-hit run, D_FLOOR s each (10,000+
  # round trips: 10 + 6 s); PostgreSQL alone on workload 5's rewritten
  # SQL, D_W5DIRECT s in W5D_RUNS runs (6 s), and workload 5 with one text,
  # D_LEDGER s in W5D_RUNS runs (18 s). Workload 5 runs 6 s per part,
  # not 8, to pay for its part with pgbench's 256 clients (about 8 s in
  # each of 5 runs, its connections and second of warm-up included).
  D_FLOOR=1; D_MYPASS=3; D_W5DIRECT=2
fi
W5D_RUNS=$(( RUNS < 3 ? RUNS : 3 ))
W4R_RUNS=$RUNS
[ -z "$VISITS_100M" ] || SCALE_SIZES="$SCALE_SIZES 100m"
# Workload 6: idle connections held by one dpproxy (issue 18: 10,000).
IDLE_CONNS=10000
ACC_RUNS=${ACC_OVERRIDE:-$ACC_RUNS}
# Visits per patient: twice the demo's mean (capped at 40), about 21 per
# patient (100,000 patients: 2,075,070 visits).
VISIT_RATE=2
# The MariaDB workloads (9, and MariaDB in 2) run 3 times by default even in
# the full run, to keep the whole run within 20 minutes.
MY_RUNS=${MY_RUNS:-$(( RUNS < 3 ? RUNS : 3 ))}
case "$SCALE$RUNS$ACC_RUNS$MY_RUNS" in *[!0-9]*) echo "--scale, --runs, --accuracy-runs and --mysql-runs take integers" >&2; exit 2 ;; esac

log() { printf '==> [%4ds] %s\n' "$SECONDS" "$*" >&2; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root for: $*"; return 1; fi
}
apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The Go builds run while the packages install (on a fresh machine, 108 s
# of cold build and 36 s of installs, once one after the other): the
# tools first, the micro-benchmarks' test binaries after them (see
# TESTS_PID). A failed build stops the run when it is awaited.
BIN=$(mktemp -d /tmp/dpproxy-bench-bin.XXXXXX)
GOBENCH_PKGS="rewrite mechanisms budget engine session proxy/pgwire"
build_tools() {
  go build -o "$BIN/dpproxy" ./cmd/dpproxy &&
    go build -o "$BIN/loadgen" ./bench/loadgen &&
    go build -o "$BIN/report" ./bench/report &&
    go build -o "$BIN/accuracy" ./bench/accuracy
}
build_test_binaries() {
  local p
  for p in $GOBENCH_PKGS; do
    go test -c -o "$BIN/tests/${p##*/}.test" "./$p/" || return 1
  done
}
await_build() { # await_build PID WHAT
  wait "$1" || { log "building the $2 failed"; cat "$BIN/build-$2.log" >&2; exit 1; }
}
log "building dpproxy and the benchmark tools"
build_tools >"$BIN/build-tools.log" 2>&1 &
TOOLS_PID=$!
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$BIN"' EXIT

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$PG_BIN/initdb" ] || ! command -v psql >/dev/null; then
  log "installing PostgreSQL 15"
  apt_install postgresql-15 postgresql-client-15
fi
PGBOUNCER=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
if [ ! -x "$PGBOUNCER" ]; then
  log "installing PgBouncer"
  apt_install pgbouncer
fi
# MySQL workloads (issue 6 #9 and MariaDB in #2) need dpproxy's MySQL front
# end wired into `dpproxy serve`; without it MariaDB is not installed.
MYSQL_NOTE=
if [ -n "$NO_MYSQL" ]; then
  MYSQL_NOTE="--no-mysql: workload 9 and MariaDB in workload 2 skipped"
elif [ ! -d proxy/mysqlwire ]; then
  MYSQL_NOTE="no MySQL front end (proxy/mysqlwire) in this tree: workload 9 and MariaDB in workload 2 skipped"
elif ! grep -q mysqlwire cmd/dpproxy/*.go; then
  MYSQL_NOTE="proxy/mysqlwire exists but dpproxy serve does not start it yet: workload 9 and MariaDB in workload 2 skipped"
fi
# HAProxy in TCP mode is workload 9's second floor (a proxy in C that
# copies bytes); without it that floor is not measured.
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
HAPROXY_NOTE=
if [ -z "$MYSQL_NOTE" ] && [ ! -x "$HAPROXY" ]; then
  log "installing HAProxy"
  apt_install haproxy || true
  [ -x "$HAPROXY" ] || HAPROXY_NOTE="HAProxy could not be installed: workload 9's HAProxy floor not measured"
fi
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
if [ -n "$MYSQL_NOTE" ]; then
  log "$MYSQL_NOTE"
elif [ ! -x "$MARIADBD" ] || ! command -v mariadb-install-db >/dev/null || ! command -v mariadb-admin >/dev/null ||
  ! command -v mariadb >/dev/null; then
  log "installing MariaDB"
  apt_install mariadb-server mariadb-client
fi

# PostgreSQL and PgBouncer refuse to run as root: run them as an
# unprivileged user (as scripts/test.sh does).
PG_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then
  PG_USER=postgres
  id "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$PG_USER"
fi
run_pg() { if [ "$(id -un)" = "$PG_USER" ]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi; }
# MariaDB too, as the package's "mysql" user when we are root.
MY_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then
  MY_USER=mysql
  id "$MY_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$MY_USER"
fi
run_my() { if [ "$(id -un)" = "$MY_USER" ]; then "$@"; else runuser -u "$MY_USER" -- "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK=$(mktemp -d /tmp/dpproxy-bench.XXXXXX)
chmod 755 "$WORK"
PG_DIR=$WORK/pg
PGB_DIR=$WORK/pgbouncer
MY_DIR=$WORK/mariadb
mkdir -p "$PG_DIR" "$PGB_DIR" "$MY_DIR"
chown "$PG_USER" "$PG_DIR" "$PGB_DIR" 2>/dev/null || true
chown "$MY_USER" "$MY_DIR" 2>/dev/null || true
PROXY_PIDS=()
MY_PID=
cleanup() {
  set +e
  for p in "${PROXY_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PROXY_PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  if [ -f "$PGB_DIR/pgbouncer.pid" ]; then
    pgb=$(cat "$PGB_DIR/pgbouncer.pid")
    kill "$pgb" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pgb" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pgb" 2>/dev/null
  fi
  run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1
  if [ -n "$MY_PID" ]; then
    # The server's own pid (MY_PID may be runuser's): SIGTERM, then
    # SIGKILL after 10 s.
    my_server=$(cat "$MY_DIR/mysqld.pid" 2>/dev/null || echo "$MY_PID")
    kill "$my_server" "$MY_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$my_server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$my_server" "$MY_PID" 2>/dev/null
    MY_PID=
  fi
  rm -rf "$WORK"
}
trap 'kill $(jobs -p) 2>/dev/null || true; cleanup; rm -rf "$BIN"' EXIT
trap 'exit 130' INT TERM

OUT=$ROOT/bench/results
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: >"$RAW"
record() { # record SERIES RUN JSON
  printf '{"series":"%s","run":%s,"data":%s}\n' "$1" "$2" "$3" >>"$RAW"
}

log "waiting for the build of dpproxy and the benchmark tools"
await_build "$TOOLS_PID" tools
LG=$BIN/loadgen
# The micro-benchmarks' test binaries compile while the databases start
# and load (nothing is timed then but the loads); workload 1 waits for them.
build_test_binaries >"$BIN/build-tests.log" 2>&1 &
TESTS_PID=$!

PG_PORT=$(free_port)
log "starting PostgreSQL 15 on 127.0.0.1:$PG_PORT"
run_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
# Durable settings (fsync on) as a production server would run; shared
# buffers large enough to hold the dataset.
run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=512MB -c max_parallel_workers_per_gather=0" start >/dev/null
PG_DSN="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"

PGB_PORT=$(free_port)
log "starting PgBouncer on 127.0.0.1:$PGB_PORT (transaction pooling, pool 16)"
cat >"$PGB_DIR/pgbouncer.ini" <<EOF
[databases]
postgres = host=127.0.0.1 port=$PG_PORT dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB_DIR/userlist.txt
pool_mode = transaction
default_pool_size = 16
max_client_conn = 2000
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pgbouncer.pid
EOF
echo '"postgres" ""' >"$PGB_DIR/userlist.txt"
chown "$PG_USER" "$PGB_DIR"/* 2>/dev/null || true
run_pg "$PGBOUNCER" -d "$PGB_DIR/pgbouncer.ini"
PGB_DSN="postgres://postgres@127.0.0.1:$PGB_PORT/postgres?sslmode=disable"

log "loading the demo dataset: $SCALE patients"
t0=$SECONDS
"$LG" load --dsn "$PG_DSN" --patients "$SCALE" --visit-rate "$VISIT_RATE"
LOAD_SECS=$((SECONDS - t0))
VISITS=$(psql -X -A -t "$PG_DSN" -c "SELECT count(*) FROM visits")
log "loaded $SCALE patients, $VISITS visits in ${LOAD_SECS}s"

MY_LOAD_SECS= MY_VISITS= MY_DSN=
if [ -z "$MYSQL_NOTE" ]; then
  MY_PORT=$(free_port)
  log "starting MariaDB on 127.0.0.1:$MY_PORT"
  # root@localhost without a password over TCP (as in scripts/test.sh).
  run_my mariadb-install-db --no-defaults --datadir="$MY_DIR/data" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$MY_DIR/install.log" 2>&1 ||
    { cat "$MY_DIR/install.log" >&2; exit 1; }
  # --no-defaults: nothing from /etc/mysql. Durable settings (InnoDB's
  # default flush at each commit), a buffer pool that holds the dataset
  # (like PostgreSQL's shared_buffers), no query cache, and in-memory
  # temporary tables up to 256 MB: with the default 16 MB the window
  # functions of the rewritten SQL spill to disk (100,000 patients: ~17 s
  # instead of ~2.7 s per query).
  run_my "$MARIADBD" --no-defaults --datadir="$MY_DIR/data" --socket="$MY_DIR/mysqld.sock" \
    --port="$MY_PORT" --bind-address=127.0.0.1 --pid-file="$MY_DIR/mysqld.pid" \
    --log-error="$MY_DIR/server.log" --skip-name-resolve --max-connections=300 \
    --innodb-buffer-pool-size=512M --query-cache-type=0 --query-cache-size=0 \
    --tmp-table-size=256M --max-heap-table-size=256M >/dev/null 2>&1 &
  MY_PID=$!
  for _ in $(seq 1 300); do
    mariadb-admin --no-defaults -uroot -h127.0.0.1 -P"$MY_PORT" ping >/dev/null 2>&1 && break
    kill -0 "$MY_PID" 2>/dev/null || { cat "$MY_DIR/server.log" >&2; exit 1; }
    sleep 0.1
  done
  mariadb-admin --no-defaults -uroot -h127.0.0.1 -P"$MY_PORT" ping >/dev/null ||
    { log "MariaDB did not start"; cat "$MY_DIR/server.log" >&2; exit 1; }
  MY_DSN="root@tcp(127.0.0.1:$MY_PORT)/bench"
  my_sql() { mariadb --no-defaults -uroot -h127.0.0.1 -P"$MY_PORT" -N -B -e "$1" bench; }
  log "loading the demo dataset into MariaDB: $SCALE patients"
  t0=$SECONDS
  "$LG" load-mysql --dsn "$MY_DSN" --patients "$SCALE" --visit-rate "$VISIT_RATE"
  MY_LOAD_SECS=$((SECONDS - t0))
  MY_VISITS=$(my_sql "SELECT COUNT(*) FROM visits")
  log "loaded $SCALE patients, $MY_VISITS visits into MariaDB in ${MY_LOAD_SECS}s"
fi

# Policies: the demo policy's tables and defaults, a PostgreSQL backend, an
# analyst "bench" (password "bench") with a budget that never runs out.
VERIFIERS=$(printf 'bench\n' | "$BIN/dpproxy" passwd --password-stdin 2>/dev/null)
# The cache-off dpproxy also has an admin listener (login bench, password
# bench): workload 5 reads its ledger's counters (loadgen --metrics).
ADMIN_SCRAM=$(grep -m1 'scram_sha_256:' <<<"$VERIFIERS" | sed 's/^ *//')
# The listen limits let one analyst hold workload 6's 10,000 idle
# connections and workload 10's 256 clients (defaults: 1,000 in all, 100
# per analyst); the statement timeout lets workload 10's largest datasets
# (--visits-100m) finish. POLICY_PG_DSN, when set, replaces the PostgreSQL
# backend's DSN (workload 10's generated databases).
write_policy() { # write_policy FILE PORT CACHE_SIZE LEDGER [mysql] (ADMIN_PORT set: an admin listener there, login bench)
  local listen="  postgres: 127.0.0.1:$2" backend="  kind: postgres
  dsn: \"${POLICY_PG_DSN:-$PG_DSN}\""
  if [ "${5:-}" = mysql ]; then
    # MySQL front end only, MariaDB backend.
    listen="  postgres: \"\"
  mysql: 127.0.0.1:$2"
    backend="  kind: mysql
  dsn: \"$MY_DSN\""
  fi
  {
    cat <<EOF
listen:
$listen
  idle_timeout: 1h
  statement_timeout: 2h
  max_connections: 20000
  max_connections_per_analyst: 20000
backend:
$backend
  max_conns: 16
ledger:
  path: $4
cache:
  size: $3
defaults:
  epsilon: 0.5
  delta: 1e-6
  max_epsilon_per_query: 2.0
  max_groups_per_unit: 1
  max_rows_per_unit: 1
analysts:
  - name: bench
$VERIFIERS
    budget:
      epsilon: 1e12
      delta: 0.5
EOF
    if [ -n "${ADMIN_PORT:-}" ]; then
      printf 'admin:\n  listen: 127.0.0.1:%s\n  user: bench\n  password:\n    %s\n' "$ADMIN_PORT" "$ADMIN_SCRAM"
    fi
    sed -n '/^protected_tables:/,$p' cmd/dpproxy/demo_policy.yaml
  } >"$1"
}
start_proxy() { # start_proxy NAME CACHE_SIZE [mysql] → sets PROXY_PORT, PROXY_PID (POLICY_PG_DSN, ADMIN_PORT: see write_policy)
  local name=$1 port
  port=$(free_port)
  while [ "$port" = "${ADMIN_PORT:-}" ]; do port=$(free_port); done
  write_policy "$WORK/$name.yaml" "$port" "$2" "$WORK/$name-ledger.db" "${3:-}"
  "$BIN/dpproxy" serve --config "$WORK/$name.yaml" >"$WORK/$name.log" 2>&1 &
  PROXY_PID=$!
  PROXY_PIDS+=("$PROXY_PID")
  for _ in $(seq 1 300); do
    grep -q 'dpproxy listening' "$WORK/$name.log" && break
    kill -0 "$PROXY_PID" 2>/dev/null || { cat "$WORK/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  grep -q 'dpproxy listening' "$WORK/$name.log" || { log "dpproxy $name did not start"; cat "$WORK/$name.log" >&2; exit 1; }
  PROXY_PORT=$port
}
# start_relay NAME TARGET_PORT → sets RELAY_PORT, RELAY_PID: a bare Go relay
# (loadgen relay, bench/loadgen/relay.go) to 127.0.0.1:TARGET_PORT, the
# floor of a proxy written in Go; stopped with the proxies.
# start_relay NAME --answer PROTOCOL starts instead a server that answers
# every query from memory (loadgen answer, bench/loadgen/answer.go), the
# floor of a cache hit's round trip.
start_relay() {
  local name=$1 port
  port=$(free_port)
  if [ "$2" = --answer ]; then
    "$LG" answer --protocol "$3" --listen "127.0.0.1:$port" --for 6h >"$WORK/$name.log" 2>&1 &
  else
    "$LG" relay --listen "127.0.0.1:$port" --target "127.0.0.1:$2" --for 6h >"$WORK/$name.log" 2>&1 &
  fi
  RELAY_PID=$!
  PROXY_PIDS+=("$RELAY_PID")
  for _ in $(seq 1 100); do
    grep -q "127.0.0.1:$port" "$WORK/$name.log" && break
    kill -0 "$RELAY_PID" 2>/dev/null || { cat "$WORK/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  grep -q "127.0.0.1:$port" "$WORK/$name.log" || { log "relay $name did not start"; cat "$WORK/$name.log" >&2; exit 1; }
  RELAY_PORT=$port
}
# start_haproxy PORT: HAProxy in TCP mode (it parses nothing) on a free
# port in front of PORT, in the foreground as one process with one thread
# (in turns on the development machine one thread gave 0.53–0.56× direct
# MariaDB's TPS and two 0.50–0.51×), stopped with the proxies. Returns 1
# (HAProxy stopped) if it does not listen within 10 s: it is an optional
# floor, and the run goes on without it.
start_haproxy() {
  local port
  port=$(free_port)
  cat >"$WORK/haproxy.cfg" <<EOF
global
    maxconn 2000
    nbthread 1
defaults
    mode tcp
    timeout connect 5s
    timeout client 6h
    timeout server 6h
listen mariadb
    bind 127.0.0.1:$port
    server mariadb 127.0.0.1:$1
EOF
  "$HAPROXY" -db -f "$WORK/haproxy.cfg" >"$WORK/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
  PROXY_PIDS+=("$HAPROXY_PID")
  for _ in $(seq 1 100); do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      HAPROXY_PORT=$port
      return 0
    fi
    kill -0 "$HAPROXY_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  kill "$HAPROXY_PID" 2>/dev/null || true
  return 1
}
# File descriptors for 10,000 idle connections (dpproxy and loadgen each
# hold one per connection): 65,536 if allowed, else the hard limit (Go
# programs also raise their soft limit to the hard limit themselves).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
if [ "$NOFILE" != unlimited ] && [ "$NOFILE" -lt $((IDLE_CONNS + 500)) ]; then
  log "warning: open files limited to $NOFILE: workload 6 cannot open $IDLE_CONNS connections"
fi
NOCACHE_ADMIN_PORT=$(free_port)
ADMIN_PORT=$NOCACHE_ADMIN_PORT start_proxy nocache 0
NOCACHE_PORT=$PROXY_PORT NOCACHE_PID=$PROXY_PID
NOCACHE_METRICS="http://bench:bench@127.0.0.1:$NOCACHE_ADMIN_PORT/metrics"
start_proxy cache 1000
CACHE_PORT=$PROXY_PORT CACHE_PID=$PROXY_PID
# The same dpproxy on one processor (GOMAXPROCS=1, the Go runtime's one
# knob for it), for workload 4 only: PgBouncer runs one thread, and on
# these two cores, shared with the database and the load generator, the
# runtime's coordination of two processors costs dpproxy CPU per query.
GOMAXPROCS=1 start_proxy cache1p 1000
CACHE1P_PID=$PROXY_PID
P_CACHE1P="postgres://bench:bench@127.0.0.1:$PROXY_PORT/bench?sslmode=disable"
P_NOCACHE="postgres://bench:bench@127.0.0.1:$NOCACHE_PORT/bench?sslmode=disable"
P_CACHE="postgres://bench:bench@127.0.0.1:$CACHE_PORT/bench?sslmode=disable"
log "dpproxy: cache off on :$NOCACHE_PORT, cache on on :$CACHE_PORT (and on one processor on :$PROXY_PORT)"
start_relay relay-pg "$PG_PORT"
PG_RELAY_PID=$RELAY_PID
PG_RELAY_DSN="postgres://postgres@127.0.0.1:$RELAY_PORT/postgres?sslmode=disable"
log "bare Go relay to PostgreSQL on :$RELAY_PORT"
start_relay answer-pg --answer postgres
PG_ANSWER_DSN="postgres://bench:bench@127.0.0.1:$RELAY_PORT/bench?sslmode=disable"
log "server answering from memory (PostgreSQL protocol) on :$RELAY_PORT"

# Workloads 1 and 2: one DP aggregate over visits.
DPQ="SELECT diagnosis, COUNT(*), AVG(cost) FROM visits GROUP BY diagnosis"
# The floor of workload 2: one row per (patient, diagnosis) and nothing
# else, the least work any bounding of each patient's contribution per
# group must do.
FLOORQ="SELECT COUNT(*) FROM (SELECT patient_id, diagnosis FROM visits GROUP BY patient_id, diagnosis) AS t"
# The same floor as MariaDB runs it fastest: by sorting, with the hint the
# rewrite's per-(unit, group) level carries (SQL_BIG_RESULT).
MY_FLOORQ_SORTED="SELECT COUNT(*) FROM (SELECT SQL_BIG_RESULT patient_id, diagnosis FROM visits GROUP BY patient_id, diagnosis) AS t"
# backend_sql POLICY QUERY: the backend SQL dpproxy explain gives for
# QUERY, having read the database as dpproxy serve does (--backend: a
# table whose unit is its primary key has no per-person step) (awk reads
# to the end: exiting early could kill explain with SIGPIPE, which
# pipefail and set -e would turn into the run's end).
backend_sql() {
  "$BIN/dpproxy" explain --backend --config "$1" "$2" 2>>"$WORK/explain.log" | awk 'f == 1 {sub(/^  /, ""); print; f = 2} /^backend SQL/ && !f {f = 1}'
}
# backend_sql_offline POLICY QUERY: the same without reading the database
# (dpproxy explain alone): every table bounded per person.
backend_sql_offline() {
  "$BIN/dpproxy" explain --config "$1" "$2" 2>>"$WORK/explain.log" | awk 'f == 1 {sub(/^  /, ""); print; f = 2} /^backend SQL/ && !f {f = 1}'
}
REWRITTEN=$(backend_sql "$WORK/nocache.yaml" "$DPQ")
[ -n "$REWRITTEN" ] || { log "could not get the rewritten SQL from dpproxy explain"; exit 1; }
printf '%s\n' "$REWRITTEN" >"$OUT/rewritten.sql"
# pin_servers CPUS: every thread of the database servers (PostgreSQL's
# postmaster and its processes, whose later children inherit it; MariaDB's
# threads, whose later ones are created by a pinned one) on CPUS, as
# taskset -c takes them. A server or kernel that refuses is logged and the
# run goes on unpinned.
NCPU=$(nproc)
PIN_NOTE=
pin_servers() {
  local cpus=$1 pids pid
  pids=$(head -1 "$PG_DIR/data/postmaster.pid" 2>/dev/null)
  [ -z "$pids" ] || pids="$pids $(pgrep -P "$pids" | tr '\n' ' ')"
  [ -z "$MY_PID" ] || pids="$pids $(cat "$MY_DIR/mysqld.pid" 2>/dev/null)"
  for pid in $pids; do
    if ! taskset -a -p -c "$cpus" "$pid" >/dev/null 2>&1; then
      kill -0 "$pid" 2>/dev/null || continue # a backend that just ended
      log "could not pin process $pid to CPU $cpus: the sequential workloads run without (full) pinning"
      PIN_NOTE="the database servers not pinned (taskset refused)"
    fi
  done
}
# fastest_cpu: the core on which a short fixed loop ends soonest.
fastest_cpu() {
  local c best=0 best_ns= t0 ns
  for c in $(seq 0 $((NCPU - 1))); do
    t0=$(date +%s%N)
    taskset -c "$c" python3 -c 'sum(range(3000000))' 2>/dev/null || { echo 0; return; }
    ns=$(($(date +%s%N) - t0))
    if [ -z "$best_ns" ] || [ "$ns" -lt "$best_ns" ]; then best=$c best_ns=$ns; fi
  done
  echo "$best"
}
# record_targets RUN COMMAND LOADGEN-ARGS...: a loadgen command that prints
# one result per named target (alternate: the targets in turns, one query
# each per round; turns: in slices of a second, in turns; either way a
# ratio's two sides run within the same seconds) and one record per
# target, under its name.
record_targets() {
  local r=$1 out line name
  shift
  out=$("$LG" "$@")
  while IFS= read -r line; do
    name=${line#*\"target\":\"}
    record "${name%%\"*}" "$r" "$line"
  done <<<"$out"
}
# pin_sequential and unpin_servers bracket the sequential workloads (1, 2,
# 2b, 9's DP aggregate, 10's visits). They run one query at a time, and
# the two sides of their ratios run in different server processes or
# threads (dpproxy's backend connection, the load generator's own): this
# machine's two cores differ in speed by up to 1.6× at times (a fixed loop
# 1.06-1.18 s on one, 0.68-0.72 s on the other; the same query 1.3 s and
# 2.0 s in turns in one run), so unpinned the ratio measured which core
# each side landed on. On one core both sides see the same speed: the
# faster one, found each time (their speeds change). The concurrent
# workloads run on every core.
pin_sequential() {
  local c
  c=$(fastest_cpu)
  log "the database servers on CPU $c (the faster now) for the sequential workload"
  pin_servers "$c"
}
unpin_servers() { pin_servers "0-$((NCPU - 1))"; }

# Nothing else may run while the workloads are timed.
await_build "$TESTS_PID" tests
pin_sequential
log "workloads 1-2: $DPQ ($RUNS runs × $W1_COUNT rounds of the 4 targets in turns, sequential, cache off)"
for r in $(seq 1 "$RUNS"); do
  record_targets "$r" alternate --count "$W1_COUNT" --warmup 1 \
    --target w1.proxy --dsn "$P_NOCACHE" --query "$DPQ" \
    --target w1.direct_rewritten --dsn "$PG_DSN" --query "$REWRITTEN" \
    --target w2.direct_original --dsn "$PG_DSN" --query "$DPQ" \
    --target w2.direct_floor --dsn "$PG_DSN" --query "$FLOORQ"
done

# Workload 2b: a table whose privacy unit is its primary key (patients):
# dpproxy sends it without the per-person step; the per-person form (what
# dpproxy explain gives without reading the database) and the original
# SQL, in turns, directly on PostgreSQL.
KQ="SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region"
K_REWRITTEN=$(backend_sql "$WORK/nocache.yaml" "$KQ")
K_PER_UNIT=$(backend_sql_offline "$WORK/nocache.yaml" "$KQ")
case "$K_REWRITTEN|$K_PER_UNIT" in
  \|*|*\|) log "workload 2b: could not get the SQL of $KQ from dpproxy explain"; exit 1 ;;
  *dp_u*\|*) log "workload 2b: the rewritten SQL of $KQ still bounds per person: $K_REWRITTEN"; exit 1 ;;
  *\|*dp_u*) ;;
  *) log "workload 2b: the per-person form of $KQ does not bound per person: $K_PER_UNIT"; exit 1 ;;
esac
log "workload 2b: $KQ on a table keyed by its unit ($RUNS runs × $W2K_COUNT rounds of 3 targets in turns)"
for r in $(seq 1 "$RUNS"); do
  record_targets "$r" alternate --count "$W2K_COUNT" --warmup 1 \
    --target w2k.direct_rewritten --dsn "$PG_DSN" --query "$K_REWRITTEN" \
    --target w2k.direct_per_unit --dsn "$PG_DSN" --query "$K_PER_UNIT" \
    --target w2k.direct_original --dsn "$PG_DSN" --query "$KQ"
done

# Workload 3: the same DP query repeated, answered from the cache. Next
# to each 1-client run, its floors: SELECT 1 answered by dpproxy itself
# (session/local.go: no cache, no backend) and by PostgreSQL directly, and
# the same query answered from memory by a server that does nothing else
# (loadgen answer).
unpin_servers
log "workload 3: cache hits, 1 client ${D_CACHE1}s and 16 clients ${D_CACHE}s, $RUNS runs (floors: SELECT 1 and an answer from memory, ${D_FLOOR}s each)"
CQ="SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region"
for r in $(seq 1 "$RUNS"); do
  record w3.c1 "$r" "$("$LG" run --dsn "$P_CACHE" --query "$CQ" --clients 1 --duration "${D_CACHE1}s")"
  record w3.floor.local "$r" "$("$LG" run --dsn "$P_CACHE" --query "SELECT 1" --clients 1 --duration "${D_FLOOR}s")"
  record w3.floor.direct "$r" "$("$LG" run --dsn "$PG_DSN" --query "SELECT 1" --clients 1 --duration "${D_FLOOR}s")"
  record w3.floor.answer "$r" "$("$LG" run --dsn "$PG_ANSWER_DSN" --query "$CQ" --clients 1 --duration "${D_FLOOR}s")"
  record w3.c16 "$r" "$("$LG" run --dsn "$P_CACHE" --query "$CQ" --clients 16 --duration "${D_CACHE}s")"
done

# Workload 4: passthrough on a public table, pgbench -S style, through
# dpproxy, dpproxy on one processor, the bare Go relay (the floor of a
# proxy in Go), PgBouncer and direct.
PQ='SELECT clinic_id, name, city FROM clinics WHERE clinic_id = $1'
log "workload 4: passthrough, 16 clients, ${D_PASS}s per target and protocol in slices of 1 s in turns, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  for mode in simple extended; do
    relay=()
    if [ "$r" -le "$W4R_RUNS" ]; then
      relay=(--target "w4.$mode.relay" --dsn "$PG_RELAY_DSN" --pid "$PG_RELAY_PID")
    fi
    record_targets "$r" turns --query "$PQ" --clients 16 --mode "$mode" --slice 1s --duration "${D_PASS}s" \
      --target "w4.$mode.proxy" --dsn "$P_CACHE" --pid "$CACHE_PID" \
      --target "w4.$mode.proxy1p" --dsn "$P_CACHE1P" --pid "$CACHE1P_PID" "${relay[@]}" \
      --target "w4.$mode.pgbouncer" --dsn "$PGB_DSN" --pid "$(cat "$PGB_DIR/pgbouncer.pid")" \
      --target "w4.$mode.direct" --dsn "$PG_DSN" --pid 0
  done
done

# Workload 5: many small DP queries with distinct text (no cache hit
# possible), each charged to the durable ledger. Its backend ceiling
# (w5.direct): the SQL dpproxy sends for them (dpproxy explain --backend:
# one statement, the query's constant its one parameter) straight to
# PostgreSQL, prepared once per connection as dpproxy's backend does, the
# parameter distinct for each execution, 32 clients. The marker constant
# is as large as the run's (a bigint), so its parameter's type is theirs.
LQ='SELECT COUNT(*) FROM patients WHERE patient_id = {i}'
W5_MARK=98765432109
W5_EXPLAIN=$("$BIN/dpproxy" explain --backend --config "$WORK/nocache.yaml" "${LQ//\{i\}/$W5_MARK}" 2>>"$WORK/explain.log")
W5_DIRECT_Q=$(printf '%s\n' "$W5_EXPLAIN" | awk 'f == 1 {sub(/^  /, ""); print; exit} /^sent with the constants as parameters:/ {f = 1}')
W5_DIRECT_NOTE=
if [ -n "$W5_DIRECT_Q" ] && printf '%s\n' "$W5_EXPLAIN" | grep -qx "  parameters: \$1 = '$W5_MARK'"; then
  printf '%s\n' "$W5_DIRECT_Q" >"$OUT/rewritten-w5.sql"
else
  W5_DIRECT_Q=
  W5_DIRECT_NOTE="workload 5's backend SQL does not take the query's constant as its one parameter: its PostgreSQL ceiling not measured"
  log "$W5_DIRECT_NOTE"
fi
# Next to it (w5.sametext), the same query with one constant for every
# execution, cache off: each is still charged and answered from the
# backend with fresh noise, but its parse and analysis come from the
# session's plan memo: what dpproxy charges when those cost nothing.
LQ_SAME=${LQ//\{i\}/1}
log "workload 5: small DP queries, distinct text, 32 and 128 clients (and 256 of pgbench's), ${D_LEDGER}s each, $RUNS runs (one text: $W5D_RUNS runs; PostgreSQL alone: ${D_W5DIRECT}s, $W5D_RUNS runs)"
for r in $(seq 1 "$RUNS"); do
  record w5 "$r" "$("$LG" run --dsn "$P_NOCACHE" --query "$LQ" --clients 32 --duration "${D_LEDGER}s" --ledger "$WORK/nocache-ledger.db" --metrics "$NOCACHE_METRICS" --pid "$NOCACHE_PID")"
  # The same with 128 clients (w5.c128): the target is judged on the most
  # of the rates in each run (bench/report).
  record w5.c128 "$r" "$("$LG" run --dsn "$P_NOCACHE" --query "$LQ" --clients 128 --duration "${D_LEDGER}s" --ledger "$WORK/nocache-ledger.db" --metrics "$NOCACHE_METRICS" --pid "$NOCACHE_PID")"
  # And with pgbench's 256 clients (w5.pgbench.c256: C and libpq, two
  # threads), which take less of the two cores than loadgen's Go clients:
  # the rate and what each client costs, side by side (bench/report).
  if [ -x "$PG_BIN/pgbench" ]; then
    if out=$("$LG" pgbench --pgbench "$PG_BIN/pgbench" --dsn "$P_NOCACHE" --query "$LQ" --clients 256 --threads 2 --duration "${D_LEDGER}s" --ledger "$WORK/nocache-ledger.db" --metrics "$NOCACHE_METRICS" --pid "$NOCACHE_PID"); then
      record w5.pgbench.c256 "$r" "$out"
    else
      log "workload 5 with pgbench's clients failed in run $r"
    fi
  fi
  if [ "$r" -le "$W5D_RUNS" ]; then
    record w5.sametext "$r" "$("$LG" run --dsn "$P_NOCACHE" --query "$LQ_SAME" --clients 32 --duration "${D_LEDGER}s" --ledger "$WORK/nocache-ledger.db" --pid "$NOCACHE_PID")"
  fi
  if [ -n "$W5_DIRECT_Q" ] && [ "$r" -le "$W5D_RUNS" ]; then
    record w5.direct "$r" "$("$LG" run --dsn "$PG_DSN" --query "$W5_DIRECT_Q" --mode prepared --param-max 0 --clients 32 --duration "${D_W5DIRECT}s")"
  fi
done

# Workload 6: 10,000 idle connections (each authenticated with SCRAM and
# one query), on a freshly started dpproxy. loadgen opens 32 at a time with
# its raw client, which derives the SCRAM keys from the password once
# (dpproxy still checks every proof); with pgx each connection would cost
# the load generator a PBKDF2 (4096 iterations) on the same two cores,
# about 20 s per run instead of about 5.
log "workload 6: $IDLE_CONNS idle connections, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  start_proxy "idle$r" 1000
  record w6 "$r" "$("$LG" idle --dsn "postgres://bench:bench@127.0.0.1:$PROXY_PORT/bench?sslmode=disable" --conns "$IDLE_CONNS" --concurrency 32 --hold "${IDLE_HOLD}s" --pid "$PROXY_PID")"
  kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
done

# Workload 9 (and MariaDB in workload 2): the MySQL front end with a
# MariaDB backend against direct MariaDB, with go-sql-driver. simple = text
# protocol (COM_QUERY), extended = binary protocol (COM_STMT_PREPARE,
# EXECUTE and CLOSE per query).
MY_VERSION=
if [ -z "$MYSQL_NOTE" ]; then
  MY_VERSION=$(my_sql "SELECT VERSION()")
  start_proxy my-nocache 0 mysql
  MY_NOCACHE_PORT=$PROXY_PORT
  start_proxy my-cache 1000 mysql
  MY_CACHE_PORT=$PROXY_PORT MY_CACHE_PID=$PROXY_PID
  M_NOCACHE="bench:bench@tcp(127.0.0.1:$MY_NOCACHE_PORT)/bench"
  M_CACHE="bench:bench@tcp(127.0.0.1:$MY_CACHE_PORT)/bench"
  log "dpproxy (MySQL front end, MariaDB backend): cache off on :$MY_NOCACHE_PORT, cache on on :$MY_CACHE_PORT"
  start_relay relay-my "$MY_PORT"
  MY_RELAY_PID=$RELAY_PID
  M_RELAY="root@tcp(127.0.0.1:$RELAY_PORT)/bench"
  log "bare Go relay to MariaDB on :$RELAY_PORT"
  M_HAPROXY= MY_HAPROXY_PID=
  if [ -z "$HAPROXY_NOTE" ] && start_haproxy "$MY_PORT"; then
    M_HAPROXY="root@tcp(127.0.0.1:$HAPROXY_PORT)/bench" MY_HAPROXY_PID=$HAPROXY_PID
    log "HAProxy (TCP mode) to MariaDB on :$HAPROXY_PORT"
  elif [ -z "$HAPROXY_NOTE" ]; then
    HAPROXY_NOTE="HAProxy did not start: workload 9's HAProxy floor not measured"
    log "$HAPROXY_NOTE"
    tail -5 "$WORK/haproxy.log" >&2 || true
  fi
  start_relay answer-my --answer mysql
  M_ANSWER="bench:bench@tcp(127.0.0.1:$RELAY_PORT)/bench"
  log "server answering from memory (MySQL protocol) on :$RELAY_PORT"
  MY_REWRITTEN=$(backend_sql "$WORK/my-nocache.yaml" "$DPQ")
  [ -n "$MY_REWRITTEN" ] || { log "could not get the rewritten MySQL SQL from dpproxy explain"; exit 1; }
  printf '%s\n' "$MY_REWRITTEN" >"$OUT/rewritten-mysql.sql"
  MLG=("$LG" run --driver mysql)
  pin_sequential
  log "workload 9 (1) and 2 on MariaDB: $MY_RUNS runs × $W1_COUNT rounds of the 5 targets in turns"
  for r in $(seq 1 "$MY_RUNS"); do
    record_targets "$r" alternate --driver mysql --count "$W1_COUNT" --warmup 1 \
      --target w9.w1.proxy --dsn "$M_NOCACHE" --query "$DPQ" \
      --target w9.w1.direct_rewritten --dsn "$MY_DSN" --query "$MY_REWRITTEN" \
      --target w2.mariadb.direct_original --dsn "$MY_DSN" --query "$DPQ" \
      --target w2.mariadb.direct_floor --dsn "$MY_DSN" --query "$FLOORQ" \
      --target w2.mariadb.direct_floor_sorted --dsn "$MY_DSN" --query "$MY_FLOORQ_SORTED"
  done
  unpin_servers
  log "workload 9 (3): cache hits, 1 client ${D_CACHE1}s and 16 clients ${D_CACHE}s, $MY_RUNS runs (floors: SELECT 1 and an answer from memory, ${D_FLOOR}s each)"
  for r in $(seq 1 "$MY_RUNS"); do
    record w9.w3.c1 "$r" "$("${MLG[@]}" --dsn "$M_CACHE" --query "$CQ" --clients 1 --duration "${D_CACHE1}s")"
    record w9.w3.floor.local "$r" "$("${MLG[@]}" --dsn "$M_CACHE" --query "SELECT 1" --clients 1 --duration "${D_FLOOR}s")"
    record w9.w3.floor.direct "$r" "$("${MLG[@]}" --dsn "$MY_DSN" --query "SELECT 1" --clients 1 --duration "${D_FLOOR}s")"
    record w9.w3.floor.answer "$r" "$("${MLG[@]}" --dsn "$M_ANSWER" --query "$CQ" --clients 1 --duration "${D_FLOOR}s")"
    record w9.w3.c16 "$r" "$("${MLG[@]}" --dsn "$M_CACHE" --query "$CQ" --clients 16 --duration "${D_CACHE}s")"
  done
  MPQ='SELECT clinic_id, name, city FROM clinics WHERE clinic_id = ?'
  log "workload 9 (4): passthrough, 16 clients, ${D_MYPASS}s per target and protocol in slices of 1 s in turns, $MY_RUNS runs"
  for r in $(seq 1 "$MY_RUNS"); do
    for mode in simple extended; do
      haproxy_target=()
      if [ -n "$M_HAPROXY" ]; then
        haproxy_target=(--target "w9.w4.$mode.haproxy" --dsn "$M_HAPROXY" --pid "$MY_HAPROXY_PID")
      fi
      record_targets "$r" turns --driver mysql --query "$MPQ" --clients 16 --mode "$mode" --slice 1s --duration "${D_MYPASS}s" \
        --target "w9.w4.$mode.proxy" --dsn "$M_CACHE" --pid "$MY_CACHE_PID" \
        --target "w9.w4.$mode.relay" --dsn "$M_RELAY" --pid "$MY_RELAY_PID" \
        "${haproxy_target[@]}" \
        --target "w9.w4.$mode.direct" --dsn "$MY_DSN" --pid 0
    done
  done
fi

# Workload 10 (issue 18, scale figures), last so that its large datasets
# do not evict the others' from the buffers.
# Clients: workload 4's passthrough (simple protocol) and workload 3's
# cache hit through the cache-on dpproxy, and workload 5's charged query
# through the cache-off one, with 1, 16, 64 and 256 clients, one short run
# each (dpproxy's backend pool is 16: beyond that, clients queue for a
# backend connection).
log "workload 10: clients 1, 16, 64, 256 (passthrough, cache hit and charged query, ${D_SCALE}s each)"
for c in 1 16 64 256; do
  record "w10.clients.passthrough.c$c" 1 "$("$LG" run --dsn "$P_CACHE" --query "$PQ" --clients "$c" --mode simple --duration "${D_SCALE}s" --pid "$CACHE_PID")"
  record "w10.clients.cachehit.c$c" 1 "$("$LG" run --dsn "$P_CACHE" --query "$CQ" --clients "$c" --duration "${D_SCALE}s" --pid "$CACHE_PID")"
  record "w10.clients.charged.c$c" 1 "$("$LG" run --dsn "$P_NOCACHE" --query "$LQ" --clients "$c" --duration "${D_SCALE}s" --ledger "$WORK/nocache-ledger.db" --metrics "$NOCACHE_METRICS" --pid "$NOCACHE_PID")"
done
# Visits: workload 1's DP aggregate (cache off) through dpproxy and its
# rewritten SQL directly, on datasets of about 1, 10 (and with
# --visits-100m 100) million visits generated into their own databases
# (about 20.75 visits per patient at visit rate 2), each dropped after use.
# Bounded in time: 2 measured queries per target, in turns (loadgen
# alternate: the machine's speed drifts), and no warm-up: the loader's
# VACUUM has just read every page, and the p50 of 2 is the faster one.
# At 10M visits that is already 4 queries of 7-20 s and a 30-80 s load
# (2-3 minutes; workload 10 in all about 3-4 minutes, workload 6 about
# 1), so the default run stops there to stay within 20 minutes; 100M is
# opt-in.
SCALE_NOTE=
case " $SCALE_SIZES " in *" 10m "*) ;; *) SCALE_NOTE="10M visits not run (--quick)" ;; esac
case " $SCALE_SIZES " in *" 100m "*) ;; *) SCALE_NOTE="${SCALE_NOTE:+$SCALE_NOTE; }100M visits not run (needs bash bench/run.sh --visits-100m)" ;; esac
for size in $SCALE_SIZES; do
  case "$size" in
    1m) sp=48200 ;;
    10m) sp=482000 ;;
    100m) sp=4820000 ;;
    *) log "unknown visits size $size"; exit 1 ;;
  esac
  # About 170 bytes of disk per visit (tables, indexes), 40% more for the
  # queries' temporary files, and 2 GB spare.
  need_kb=$(( sp * 21 * 170 * 14 / 10 / 1024 + 2 * 1024 * 1024 ))
  avail_kb=$(df -Pk "$PG_DIR" | awk 'NR == 2 {print $4}')
  if [ "$avail_kb" -lt "$need_kb" ]; then
    log "workload 10: not enough disk for $size visits ($((avail_kb / 1024)) MB free, ~$((need_kb / 1024)) MB needed): skipped"
    SCALE_NOTE="${SCALE_NOTE:+$SCALE_NOTE; }$size visits skipped: not enough disk"
    continue
  fi
  db="scale_$size"
  sdsn="postgres://postgres@127.0.0.1:$PG_PORT/$db?sslmode=disable"
  PGOPTIONS="-c client_min_messages=warning" psql -X -q "$PG_DSN" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
  log "workload 10: generating $sp patients (~$size visits) into database $db"
  t0=$(date +%s%N)
  "$LG" load --dsn "$sdsn" --patients "$sp" --visit-rate "$VISIT_RATE" --timeout 2h
  load_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  sv=$(psql -X -A -t "$sdsn" -c "SELECT count(*) FROM visits")
  record "w10.visits.$size.load" 1 "{\"seconds\":$((load_ms / 1000)).$(printf '%03d' $((load_ms % 1000))),\"visits\":$sv,\"patients\":$sp}"
  POLICY_PG_DSN=$sdsn start_proxy "scale-$size" 0
  srw=$(backend_sql "$WORK/scale-$size.yaml" "$DPQ")
  [ -n "$srw" ] || { log "could not get the rewritten SQL from dpproxy explain ($size)"; exit 1; }
  log "workload 10: $sv visits loaded in $((load_ms / 1000))s; DP aggregate, 2 queries per target"
  pin_sequential
  record_targets 1 alternate --count 2 --warmup 0 --timeout 3h \
    --target "w10.visits.$size.direct_rewritten" --dsn "$sdsn" --query "$srw" \
    --target "w10.visits.$size.proxy" --dsn "postgres://bench:bench@127.0.0.1:$PROXY_PORT/bench?sslmode=disable" --query "$DPQ"
  kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true
  unpin_servers
  psql -X -q "$PG_DSN" -c "DROP DATABASE $db WITH (FORCE)"
done

PG_VERSION=$(psql -X -A -t "$PG_DSN" -c "SHOW server_version")
PGB_VERSION=$("$PGBOUNCER" --version 2>&1 | head -1)
log "stopping the servers"
cleanup
PROXY_PIDS=()
trap 'rm -rf "$BIN"' EXIT
# Write back what the databases left dirty (with --visits-100m, gigabytes
# of the dropped 100M-visit database) before timing anything: in one run
# without this, the benchmarks that allocate most ran at half their speed
# (WhereCast 63 µs against 38 µs in the run before), the others did not.
sync

# Workloads 7 and 8 and the other micro-benchmarks, with the servers gone,
# from the test binaries built while the databases loaded, one package at
# a time (two at once would each time the other's load).
log "Go micro-benchmarks (-count $GB_COUNT, -benchtime $BENCHTIME)"
: >"$OUT/gobench.txt"
for p in $GOBENCH_PKGS; do
  (cd "$ROOT/$p" && "$BIN/tests/${p##*/}.test" -test.run '^$' -test.benchmem -test.count "$GB_COUNT" -test.benchtime "$BENCHTIME" \
    -test.bench 'ParseAnalyzeRewrite|Laplace|Gaussian|Exponential10|PartitionSelection|CommitParallel|Commit10|CommitSerial|CacheHit|DPQueryNoCache|DPQueryDistinctText|PlanDistinctText|Passthrough|DataRow') \
    >>"$OUT/gobench.txt" 2>&1 ||
    { log "the micro-benchmarks of $p failed"; tail -20 "$OUT/gobench.txt" >&2; exit 1; }
done

log "accuracy report ($ACC_RUNS fresh runs per query and ε)"
"$BIN/accuracy" --runs "$ACC_RUNS" --out "$OUT"

log "writing bench/results and BENCHMARKS.md"
{
  echo "scale_patients=$SCALE"
  echo "visits=$VISITS"
  echo "runs=$RUNS"
  echo "quick=${QUICK:-0}"
  echo "visit_rate=$VISIT_RATE"
  echo "load_seconds=$LOAD_SECS"
  echo "postgresql=$PG_VERSION"
  echo "pgbouncer=$PGB_VERSION"
  echo "haproxy=$(if [ -x "$HAPROXY" ]; then "$HAPROXY" -v 2>/dev/null | awk 'NR == 1 {print $3}'; fi)"
  echo "haproxy_note=$HAPROXY_NOTE"
  echo "go=$(go version | awk '{print $3}')"
  # The machine as it was for this run: a report made again from these
  # results on another boot must not describe that one.
  echo "nproc=$(nproc)"
  echo "cpu=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "memory=$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1024 / 1024}' /proc/meminfo)"
  echo "kernel=$(cat /proc/sys/kernel/osrelease)"
  echo "debian=$(cat /etc/debian_version 2>/dev/null)"
  echo "dpproxy_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet -- . ':!bench/results' ':!BENCHMARKS.md' 2>/dev/null || echo ' (with local changes)')"
  echo "mysql_note=$MYSQL_NOTE"
  echo "mariadb=$MY_VERSION"
  echo "mariadb_runs=$MY_RUNS"
  echo "mariadb_visits=$MY_VISITS"
  echo "mariadb_load_seconds=$MY_LOAD_SECS"
  echo "durations=w1 $W1_COUNT queries/run; w2b $W2K_COUNT queries/run; w3 ${D_CACHE1}s (1 client), ${D_CACHE}s (16 clients); w4 ${D_PASS}s per target in 1 s slices in turns (w9: ${D_MYPASS}s); w5 ${D_LEDGER}s (32 clients, then 128, then pgbench's 256); w6 $IDLE_CONNS connections, hold ${IDLE_HOLD}s; w9 as w1, w3, w4 ($MY_RUNS runs); w10 ${D_SCALE}s per client count, 2 queries per target and visits size in turns; go bench $BENCHTIME × $GB_COUNT; accuracy $ACC_RUNS runs; floors: bare Go relay as w4 in $W4R_RUNS runs (w9: every run, with HAProxy in TCP mode), and w4 also through dpproxy on one processor (GOMAXPROCS=1) (w9: ${D_MYPASS}s, as dpproxy), SELECT 1 and an answer from memory ${D_FLOOR}s each next to each 1-client cache-hit run, w5 on PostgreSQL alone ${D_W5DIRECT}s × $W5D_RUNS runs; w5 with one text ${D_LEDGER}s × $W5D_RUNS runs"
  echo "idle_conns=$IDLE_CONNS"
  echo "scale_sizes=$SCALE_SIZES"
  echo "scale_client_seconds=$D_SCALE"
  echo "scale_note=$SCALE_NOTE"
  echo "sequential_pinning=${PIN_NOTE:-the database servers pinned to one core (the faster of the two, timed with a short loop before each workload)}"
  echo "w5_direct_note=$W5_DIRECT_NOTE"
  echo "total_seconds=$SECONDS"
} >"$OUT/run.txt"
"$BIN/report" --results "$OUT" --benchmarks-md BENCHMARKS.md
log "done in ${SECONDS}s: bench/results/results.md, results.json, BENCHMARKS.md"
