#!/usr/bin/env bash
# Run Redis 7.0.15's own test units (tests/unit/*.tcl of a Redis source tree)
# in their external mode against a trisque node, and print a table: one line
# per unit with its passed / failed / skipped tests.
#
# Usage: tools/redis-suite.sh REDIS_SRC [unit ...]
#
#   REDIS_SRC  a Redis 7.0.15 tree with tests/ and runtest (e.g. `git archive
#              7.0.15 tests runtest` of redis/redis, unpacked): kept outside
#              the project, copied, never modified.
#   unit       names under tests/unit without .tcl (type/list, expire...);
#              default: the 23 units of the keyspace trisque claims.
#
# Each unit gets a fresh node on a free loopback port (the units set config
# and leave keys behind) and runs as
#   ./runtest --host 127.0.0.1 --port P --single unit/<name>
#             --tags -needs:debug --tags -needs:repl --tags -needs:save
# under a wall-clock limit.  The node's stderr and log, and runtest's output,
# stay in the run's log directory.  Exit status: 0 if no test failed.
#
# Environment:
#   PYTHON                    the interpreter that runs trisque (default
#                             .venv/bin/python of the project)
#   REDIS_SUITE_TIMEOUT       seconds per unit (default 900)
#   REDIS_SUITE_WORKDIR       parent dir of the temporary copy (default /tmp)
#   REDIS_SUITE_VERBOSE=1     also print every failed test's name
#   REDIS_SUITE_SERVER        a redis-server to run the units against instead of
#                             trisque (the reference figures)
#   REDIS_SUITE_RUNTEST_ARGS  more runtest options, e.g. --skiptest /stream
#                             (to see past a unit's first missing piece)

set -u

usage() {
    echo "usage: $0 REDIS_SRC [unit ...]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
SRC=$1
shift
UNITS=("$@")
if [ ${#UNITS[@]} -eq 0 ]; then
    UNITS=(type/incr type/string type/list type/list-2 type/list-3 type/hash
           type/set type/zset type/stream type/stream-cgroups expire keyspace
           multi scripting functions scan protocol pubsub bitops bitfield sort
           info-command hyperloglog)
fi

PROJECT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$PROJECT/.venv/bin/python}
# (absolute: each node starts from its own directory; make passes .venv/bin/python)
case $PYTHON in /*) ;; */*) PYTHON=$PWD/$PYTHON ;; esac
[ -f "$SRC/runtest" ] && [ -d "$SRC/tests/unit" ] || {
    echo "error: $SRC has no runtest and tests/unit (a Redis 7.0.15 tree)" >&2; exit 2; }
[ -x "$PYTHON" ] || { echo "error: $PYTHON not found (set PYTHON)" >&2; exit 2; }
command -v tclsh8.6 >/dev/null 2>&1 || command -v tclsh8.5 >/dev/null 2>&1 || {
    echo "error: tclsh 8.5 or 8.6 not found (Debian: apt-get install tcl)" >&2; exit 2; }
command -v timeout >/dev/null 2>&1 || { echo "error: coreutils timeout not found" >&2; exit 2; }

UNIT_TIMEOUT=${REDIS_SUITE_TIMEOUT:-900}
WORK=$(mktemp -d "${REDIS_SUITE_WORKDIR:-/tmp}/redis-suite.XXXXXX") || exit 2
LOGDIR="$WORK/logs"
mkdir -p "$LOGDIR"
# runtest writes under tests/tmp: a copy of its own, so runs may overlap
cp -R "$SRC/tests" "$SRC/runtest" "$WORK/"
mkdir -p "$WORK/tests/tmp"

NODE_PID=""
RUN_PID=""

free_port() {
    # a client port and its bus port (+10000) both free, below the
    # ephemeral range as tests/harness.py picks them
    "$PYTHON" - <<'EOF'
import random, socket
for _ in range(1000):
    port = random.randrange(12000, 22000)
    try:
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(port)
    break
EOF
}

start_node() {  # start_node DIR PORT: a node, ready when it answers PING
    local dir=$1 port=$2 i
    mkdir -p "$dir"
    if [ -n "${REDIS_SUITE_SERVER:-}" ]; then  # the reference: a redis-server
        ( cd "$dir" && exec "$REDIS_SUITE_SERVER" --port "$port" --bind 127.0.0.1 --save "" \
            --appendonly no --dir "$dir" --logfile log.txt ) > "$dir/stderr.txt" 2>&1 &
    else
        printf 'port %s\nbind 127.0.0.1\ndir %s\nlogfile log.txt\n' "$port" "$dir" > "$dir/disque.conf"
        ( cd "$dir" && PYTHONPATH="$PROJECT${PYTHONPATH:+:$PYTHONPATH}" \
            exec "$PYTHON" -m trisque.server.main "$dir/disque.conf" ) > "$dir/stderr.txt" 2>&1 &
    fi
    NODE_PID=$!
    for i in $(seq 1 150); do
        if "$PYTHON" -c "import socket,sys; s=socket.create_connection(('127.0.0.1',$port),1); \
s.sendall(b'PING\r\n'); sys.exit(0 if s.recv(64).startswith(b'+PONG') else 1)" 2>/dev/null; then
            return 0
        fi
        kill -0 "$NODE_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

stop_node() {
    [ -n "$NODE_PID" ] || return 0
    kill "$NODE_PID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$NODE_PID" 2>/dev/null
    wait "$NODE_PID" 2>/dev/null
    NODE_PID=""
}

on_signal() {
    [ -n "$RUN_PID" ] && kill -TERM -- "-$RUN_PID" 2>/dev/null
    stop_node
    echo "interrupted; logs in $LOGDIR" >&2
    exit 130
}
trap on_signal INT TERM

TOTAL_PASS=0
TOTAL_FAIL=0
TOTAL_SKIP=0
T0=$(date +%s)
printf '%-22s %6s %6s %7s  %s\n' unit passed failed skipped status
for unit in "${UNITS[@]}"; do
    [ -f "$WORK/tests/unit/$unit.tcl" ] || {
        printf '%-22s %6s %6s %7s  %s\n' "$unit" - - - "no such unit"; TOTAL_FAIL=$((TOTAL_FAIL + 1)); continue; }
    name=${unit//\//_}
    log="$LOGDIR/$name.log"
    node_dir="$WORK/node-$name"
    port=$(free_port)
    start=$(date +%s)
    if ! start_node "$node_dir" "$port"; then
        printf '%-22s %6s %6s %7s  %s\n' "$unit" - - - "node did not start (see $node_dir)"
        TOTAL_FAIL=$((TOTAL_FAIL + 1)); stop_node; continue
    fi
    # setsid: timeout and runtest's test server and client in one group,
    # ended together on interruption
    # --baseport: runtest's own test server listens near it (default 21079,
    # which another run at the same time would hold)
    base=$(( 23032 + RANDOM % 6000 ))
    ( cd "$WORK" && exec setsid env TERM=dumb timeout -k 15 "$UNIT_TIMEOUT" ./runtest \
        --host 127.0.0.1 --port "$port" --single "unit/$unit" --baseport "$base" \
        --tags -needs:debug --tags -needs:repl --tags -needs:save \
        ${REDIS_SUITE_RUNTEST_ARGS:-} ) > "$log" 2>&1 < /dev/null &
    RUN_PID=$!
    wait "$RUN_PID"
    rc=$?
    RUN_PID=""
    node_alive=1
    kill -0 "$NODE_PID" 2>/dev/null || node_alive=0
    stop_node
    elapsed=$(( $(date +%s) - start ))

    clean=$(sed 's/\x1b\[[0-9;]*m//g' "$log")
    pass=$(printf '%s\n' "$clean" | grep -c '^\[ok\]: ')
    fail=$(printf '%s\n' "$clean" | grep -cE '^\[(err|exception)\]: ')
    skip=$(printf '%s\n' "$clean" | grep -cE '^\[(ignore|skip)\]: ')
    status="ok"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="TIMEOUT after ${UNIT_TIMEOUT}s"; fail=$((fail + 1))
    elif printf '%s\n' "$clean" | grep -q '^\[exception\]: '; then
        status="aborted: $(printf '%s\n' "$clean" | grep -m1 -A1 '^\[exception\]: ' | tail -1 | cut -c1-100)"
    elif [ "$fail" -gt 0 ]; then
        status="failed: $(printf '%s\n' "$clean" | grep -m1 '^\[err\]: ' | sed 's/^\[err\]: //' | cut -c1-100)"
    elif [ "$rc" -ne 0 ]; then
        status="runtest exit $rc"; fail=$((fail + 1))
    elif [ "$pass" -eq 0 ]; then
        status="no test ran"; fail=$((fail + 1))
    fi
    [ "$node_alive" -eq 1 ] || status="$status; THE NODE DIED (see $node_dir)"
    printf '%-22s %6d %6d %7d  %s (%ds)\n' "$unit" "$pass" "$fail" "$skip" "$status" "$elapsed"
    if [ "${REDIS_SUITE_VERBOSE:-0}" = 1 ]; then
        printf '%s\n' "$clean" | grep -E '^\[(err|exception)\]: ' | sed 's/^/    /'
    fi
    TOTAL_PASS=$((TOTAL_PASS + pass))
    TOTAL_FAIL=$((TOTAL_FAIL + fail))
    TOTAL_SKIP=$((TOTAL_SKIP + skip))
done

rm -rf "$WORK/tests" "$WORK/runtest"
echo "total: $TOTAL_PASS passed, $TOTAL_FAIL failed, $TOTAL_SKIP skipped in $(( $(date +%s) - T0 ))s; logs in $LOGDIR"
[ "$TOTAL_FAIL" -eq 0 ] && [ "$TOTAL_PASS" -gt 0 ]
