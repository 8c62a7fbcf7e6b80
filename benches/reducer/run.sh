#!/bin/bash
# The RV-type reducer's whole 2.5 s torque sequence (issue 18, acceptance
# 4: under 60 s whole process with at least 100 degrees of freedom), and
# its loop's indicators.
#
#   [RMOC=target/release/rmoc] bash benches/reducer/run.sh [-p NAME=VALUE ...]
#
# Extra arguments go to `rmoc simulate` (for example `-p clearance=2e-5`).
# Prints the solver statistics and the whole process's time (and, with GNU
# time, its peak memory), then `rmoc hysteresis` of the result at the rated
# 3 200 N m. Results: docs/benchmarks.md, section 3j.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root="$here/../.."
RMOC=${RMOC:-$root/target/release/rmoc}
model="$root/examples/reducer.rmo"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
simulate=("$RMOC" simulate "$model" --outputs T theta --stats -o "$dir/loop.csv" "$@")
if /usr/bin/time -f "" true 2>/dev/null; then
  /usr/bin/time -f "whole process %e s, peak memory %M KB" "${simulate[@]}"
else
  TIMEFORMAT='whole process %R s'
  time "${simulate[@]}"
fi
"$RMOC" hysteresis "$dir/loop.csv" --torque T --angle theta --rated 3200
