#!/usr/bin/env bash
# rmoc's Moreau-Jean stepper against Siconos' (MoreauJeanOSI) on the three
# contact problems of tests/models/contacts. See README.md beside this file.
#
#   bash benches/siconos/run.sh          (from anywhere; RUNS=3, RMOC=..., PY=... override)
#
# Installs python3-siconos with apt-get if Debian's python3 cannot import
# siconos (needs root or sudo); builds rmoc with cargo only if $RMOC is missing.
# Not part of CI.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
RMOC=${RMOC:-target/release/rmoc}
# Debian's interpreter: python3-siconos installs into its dist-packages, which
# a python3 from pyenv or a virtualenv earlier on PATH does not see.
PY=${PY:-/usr/bin/python3}
RUNS=${RUNS:-3}
H=1e-5
export PYTHONDONTWRITEBYTECODE=1

# --- tools -------------------------------------------------------------------
if ! "$PY" -c 'import siconos.kernel' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing python3-siconos" >&2
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-siconos >&2
fi
"$PY" -c 'import siconos.kernel' || { echo "error: $PY cannot import siconos (apt-get install python3-siconos)" >&2; exit 1; }
if [ ! -x "$RMOC" ]; then
  echo "building rmoc: cargo build --release" >&2
  cargo build --release >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

siconos_version=$(dpkg-query -W -f='${Version}' python3-siconos 2>/dev/null || echo unknown)
stamp_before=$(stat -c '%y' "$RMOC")
echo "Siconos (python3-siconos) $siconos_version with $("$PY" --version); $("$RMOC" --version) ($RMOC, built $stamp_before)"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; h = $H, $RUNS interleaved runs"
echo

models=(ball walls block)
declare -A stop=([ball]=4 [walls]=10 [block]=1)

# Each round runs every command once, so a drift of the shared machine's load
# touches both tools alike; medians are taken over the rounds. Two variants:
#   rmoc, siconos:   a CSV row per step (the last round's CSVs are compared);
#   rmoc0, siconos0: no per-step output (rmoc --interval STOP writes one row;
#                    the Siconos script runs TimeStepping.run() in C++).
# times.txt: problem tool wall_seconds integration_ms steps
timed() { # timed PROBLEM TOOL LOG CMD...: runs CMD, appends a line to times.txt
  local p=$1 tool=$2 log=$3 t0 t1 integ steps
  shift 3
  t0=$EPOCHREALTIME
  "$@" >"$log" 2>&1 || { echo "error: $* failed:" >&2; cat "$log" >&2; exit 1; }
  t1=$EPOCHREALTIME
  # rmoc --stats: "simulate X ms", "Moreau-Jean steps N,"; the scripts:
  # "integration X ms", "N Moreau-Jean steps"
  integ=$(sed -n -e 's/.*simulate \([0-9.]*\) ms.*/\1/p' -e 's/.*integration \([0-9.]*\) ms.*/\1/p' "$log")
  steps=$(sed -n -e 's/.*Moreau-Jean steps \([0-9]*\),.*/\1/p' -e 's/.*: \([0-9]*\) Moreau-Jean steps.*/\1/p' "$log")
  echo "$p $tool $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') $integ $steps" >>"$tmp/times.txt"
}
: >"$tmp/times.txt"
for ((r = 1; r <= RUNS; r++)); do
  for m in "${models[@]}"; do
    model=tests/models/contacts/$m.rmo
    timed "$m" rmoc "$tmp/$m.rmoc.log" \
      "$RMOC" simulate "$model" --step "$H" --interval "$H" -o "$tmp/$m.rmoc.csv" --stats
    timed "$m" siconos "$tmp/$m.siconos.log" "$PY" "$here/$m.py" "$tmp/$m.siconos.csv" --h "$H"
    timed "$m" rmoc0 "$tmp/$m.rmoc0.log" \
      "$RMOC" simulate "$model" --step "$H" --interval "${stop[$m]}" -o "$tmp/$m.rmoc0.csv" --stats
    timed "$m" siconos0 "$tmp/$m.siconos0.log" "$PY" "$here/$m.py" /dev/null --h "$H" --every 0
  done
  echo "round $r of $RUNS done" >&2
done

"$PY" "$here/compare.py" "$tmp"

echo
echo "Last runs:"
echo
for m in "${models[@]}"; do
  echo "- rmoc $m: $(grep 'Moreau-Jean' "$tmp/$m.rmoc.log" | sed 's/.*\(Moreau-Jean steps\)/\1/'); $(grep '^compile' "$tmp/$m.rmoc.log")"
  echo "- $(cat "$tmp/$m.siconos.log")"
  echo "- $(grep '^siconos' "$tmp/$m.siconos0.log") (--every 0, TimeStepping.run()); $(grep '^final state' "$tmp/$m.siconos0.log")"
  echo "- rmoc $m, --interval ${stop[$m]}: last row $(head -1 "$tmp/$m.rmoc0.csv" | tr -d '"') = $(tail -1 "$tmp/$m.rmoc0.csv")"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$stamp_before" != "$(stat -c '%y' "$RMOC")" ]; then
  echo "warning: $RMOC was rebuilt during the run; rerun for clean numbers"
fi
