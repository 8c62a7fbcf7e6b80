#!/bin/bash
# The RV-type reducer's whole 2.5 s torque sequence (issue 18, acceptance
# 4: under 60 s whole process with at least 100 degrees of freedom), and
# its loop's indicators.
#
#   RMOC=target/release/rmoc bash benches/reducer/run.sh [-p NAME=VALUE ...]
#
# Extra arguments go to `rmoc simulate` (for example `-p clearance=2e-5`).
# Prints the solver statistics, the whole process's time and peak memory
# (GNU time), then `rmoc hysteresis` of the result at the rated 3 200 N m.
# Results: docs/benchmarks.md, section 3j.
set -euo pipefail
RMOC=${RMOC:-target/release/rmoc}
here=$(cd "$(dirname "$0")" && pwd)
model="$here/../../examples/reducer.rmo"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "whole process %e s, peak memory %M KB" \
    "$RMOC" simulate "$model" --outputs T theta --stats -o "$dir/loop.csv" "$@"
else
  start=$(date +%s.%N)
  "$RMOC" simulate "$model" --outputs T theta --stats -o "$dir/loop.csv" "$@"
  echo "whole process $(echo "$(date +%s.%N) - $start" | bc) s"
fi
"$RMOC" hysteresis "$dir/loop.csv" --torque T --angle theta --rated 3200
