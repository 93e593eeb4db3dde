#!/usr/bin/env bash
# The fan-out measurement of docs/benchmarks.md in one command, for a bare machine:
#     bench/device_fanout.sh [LAST] [WORKERS...]
# installs the wheels in .whl (if any) into /tmp/site, then runs, on the threshold output
# of wide_independent_loops (below), `syncproof verify --scope bounded --param
# N=1000..LAST` (default 1159: 160 valuations) serially, with --workers N and with
# --cluster on a LocalCluster of N single-threaded workers, for each N of WORKERS
# (default 4 8 16), through bench/hb_bench.py fanout (pools started by forkserver and by
# spawn; cluster workers with Dask's profiler on and off); then the whole command line
# serially and with --workers of the largest N. Logs go to $OUT (default /tmp/fanout).
set -u -o pipefail
cd "$(dirname "$0")/.."
LAST=${1:-1159}
shift || true
WORKERS=${*:-4 8 16}
OUT=${OUT:-/tmp/fanout}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
kernel=/tmp/wide_independent_loops.sync
cat >"$kernel" <<'SYNC'
engines A B C D
param N
for i in 0..N {
  A a reads x[i] writes ya[i]
  B b reads x[i] writes yb[i]
  C c reads x[i] writes yc[i]
  D d reads x[i] writes yd[i]
}
D fin reads ya[0], yb[0], yc[0]
SYNC
{ echo "CPUs: $(nproc)"; python3 --version; uptime; lscpu | grep -i "model name"; } 2>&1 | tee "$OUT/machine.txt"
# shellcheck disable=SC2086
python3 bench/hb_bench.py fanout "$kernel" --param "N=1000..$LAST" --workers $WORKERS \
    --pool-method forkserver spawn --worker-profile on off 2>&1 | tee "$OUT/fanout.md"
largest=${WORKERS##* }
python3 -m verify.cli sync "$kernel" -o /tmp/wide_synced.sync 2>/dev/null || exit 1
for extra in "" "--workers $largest"; do
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    python3 -m verify.cli verify /tmp/wide_synced.sync --scope bounded --param "N=1000..$LAST" $extra >/dev/null 2>&1
    status=$?
    echo "command line, verify $extra: $(( ($(date +%s%N) - start) / 1000000 )) ms, exit $status" | tee -a "$OUT/cli.txt"
done
uptime | tee -a "$OUT/machine.txt"
