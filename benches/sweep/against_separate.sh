#!/bin/bash
# `rmoc sweep` against separate `rmoc simulate` calls (issue 19,
# acceptances 1 and 4).
#
#   RMOC=target/release/rmoc bash benches/sweep/against_separate.sh [points]
#
# 1. Speed, whole process: one `rmoc sweep` (compiled once, two worker
#    threads) against `points` calls of `rmoc simulate` (default 200) one
#    after another, each writing its result file as a user's shell loop
#    would, and, as a second baseline, two at a time with `xargs -P 2`.
#    Two models: the pendulum of tests/models (an index-3 DAE, 5 s at rtol
#    1e-8) over its length L in [1, 3], and the Kosenko-Gusev gearbox
#    (examples/gearbox.rmo) over its friction coefficient in [0, 0.3].
#    Then the sweep's summary is compared with the separate runs' last
#    rows, every column, digit for digit.
# 2. Memory: a 1 000-point sweep with the summary only; its peak resident
#    memory (GNU time's maximum RSS).
set -euo pipefail
RMOC=${RMOC:-target/release/rmoc}
N=${1:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }

# speed MODEL NAME LO HI [simulate options]: the sweep of NAME over N values
# in [LO, HI] against N separate calls.
speed() {
  local model=$1 name=$2 lo=$3 hi=$4
  shift 4
  local values
  rm -rf "$dir/sweep" "$dir"/single_* "$dir"/par_*
  local t0 t1 t2 t3 k
  t0=$(now)
  "$RMOC" sweep "$model" -p "$name=$lo:$hi:$N" -o "$dir/sweep" -q -j 2 "$@"
  t1=$(now)
  # The separate runs take the values as the summary prints them (they
  # read back to the same numbers).
  values=$(tail -n +2 "$dir/sweep/summary.csv" | cut -d, -f2)
  k=0
  for v in $values; do
    "$RMOC" simulate "$model" -p "$name=$v" -o "$dir/single_$k.csv" -q "$@"
    k=$((k+1))
  done
  t2=$(now)
  k=0
  for v in $values; do echo "$k $v"; k=$((k+1)); done |
    xargs -P 2 -n 2 sh -c "\"$RMOC\" simulate \"$model\" -p $name=\$1 -o \"$dir/par_\$0.csv\" -q $*"
  t3=$(now)
  python3 - "$dir" "$N" "$model" "$t0" "$t1" "$t2" "$t3" <<'PY'
import csv, sys
d, n, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0, t1, t2, t3 = map(float, sys.argv[4:8])
rows = list(csv.DictReader(open(f"{d}/sweep/summary.csv")))
mismatch = compared = 0
for k, row in enumerate(rows):
    last = list(csv.reader(open(f"{d}/single_{k}.csv")))
    head, final = last[0], last[-1]
    for name, value in zip(head[1:], final[1:]):
        compared += 1
        mismatch += row[name] != value
sweep, serial, parallel = t1 - t0, t2 - t1, t3 - t2
print(f"{model}, {n} points: sweep {sweep:.3f} s; separate calls {serial:.3f} s "
      f"({serial / sweep:.1f}x the sweep), two at a time {parallel:.3f} s "
      f"({parallel / sweep:.1f}x); final values differing from the separate runs: "
      f"{mismatch} of {compared}")
PY
}

speed tests/models/pendulum.rmo L 1 3
speed examples/gearbox.rmo mesh.friction.mu 0 0.3
MODEL=tests/models/pendulum.rmo
/usr/bin/time -f "%M" -o "$dir/rss" "$RMOC" sweep "$MODEL" -p "L=1:3:1000" -o "$dir/big" -q -j 2
echo "1000 points, summary only: peak memory $(( $(cat "$dir/rss") / 1024 )) MB ($(( $(wc -l < "$dir/big/summary.csv") - 1 )) rows)"
