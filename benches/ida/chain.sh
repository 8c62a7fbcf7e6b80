#!/usr/bin/env bash
# The chain benchmark (../shared/bench/p2_chain.py): rmoc against hand-written
# C + SUNDIALS IDA (chain.c, band LU) for N = 10, 100, 1000 inertias. See
# README.md beside this file.
#
#   bash benches/ida/chain.sh                  timing table (RMOC=... OLD=... RUNS=... override)
#   N10000=1 bash benches/ida/chain.sh         also N = 10000 (20000 states)
#   bash benches/ida/chain.sh --reference [N]  C + IDA at rtol 1e-12, atol 1e-14 (REF_RTOL,
#                                              REF_ATOL): all final phi and w (default N = 10)
#
# Needs libsundials-dev (IDA), gcc, python3, hyperfine and jq; installs the
# missing ones with apt-get. Uses the existing rmoc binary; it does not build rmoc.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
RMOC=${RMOC:-target/release/rmoc}
OLD=${OLD:-}            # a second rmoc binary to time (e.g. the one before a change)
OLD_BIG=${OLD_BIG:-0}   # time OLD at N >= 1000 too (slow)
N10000=${N10000:-0}     # add N = 10000
RUNS=${RUNS:-10}        # hyperfine runs for N < 1000
RUNS_BIG=${RUNS_BIG:-3} # hyperfine runs for N >= 1000
WARMUP=${WARMUP:-1}
# rmoc's final phi[1] and IDA's must agree to this relative difference (N < 1000)
AGREE_RTOL=${AGREE_RTOL:-1e-4}
GEN=${GEN:-$root/../shared/bench/p2_chain.py}
REF_RTOL=${REF_RTOL:-1e-12} # tolerances of the reference build
REF_ATOL=${REF_ATOL:-1e-14}

mode=bench
ref_n=10
if [ "${1:-}" = --reference ]; then
  mode=reference
  ref_n=${2:-10}
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--reference [N]]" >&2
  exit 2
fi

# --- tools -----------------------------------------------------------------
need=()
[ -f /usr/include/ida/ida.h ] || need+=(libsundials-dev)
command -v gcc >/dev/null || need+=(gcc)
if [ "$mode" = bench ]; then
  command -v hyperfine >/dev/null || need+=(hyperfine)
  command -v jq >/dev/null || need+=(jq)
  [ -x /usr/bin/time ] || need+=(time)
fi
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing: ${need[*]}" >&2
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
    echo "warning: apt-get install failed; continuing with what is there" >&2
fi
[ -f /usr/include/ida/ida.h ] || { echo "error: SUNDIALS IDA headers missing (apt-get install libsundials-dev)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LIBS=(-lsundials_ida -lsundials_nvecserial -lsundials_sunmatrixband -lsundials_sunlinsolband -lm)
# the reference build: tight tolerances, all final values printed
gcc -O2 -DRTOL="$REF_RTOL" -DATOL="$REF_ATOL" -DPRINT_ALL=1 -o "$tmp/chain_ref" "$here/chain.c" "${LIBS[@]}"

if [ "$mode" = reference ]; then
  "$tmp/chain_ref" "$ref_n"
  exit 0
fi

for c in hyperfine jq python3; do
  command -v "$c" >/dev/null || { echo "error: $c missing" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
[ -f "$GEN" ] || { echo "error: $GEN missing" >&2; exit 1; }
# the binary may be in the middle of a rebuild: wait up to two minutes for it
for _ in $(seq 24); do [ -x "$RMOC" ] && break; sleep 5; done
[ -x "$RMOC" ] || { echo "error: $RMOC missing (cargo build --release)" >&2; exit 1; }
if [ -n "$OLD" ] && [ ! -x "$OLD" ]; then
  echo "error: OLD=$OLD is not an executable" >&2
  exit 1
fi

gcc -O2 -Wall -Wextra -Werror -o "$tmp/chain" "$here/chain.c" "${LIBS[@]}"

sizes=(10 100 1000)
[ "$N10000" = 1 ] && sizes+=(10000)

sundials_version=$(sed -n 's/^#define SUNDIALS_VERSION "\(.*\)"/\1/p' /usr/include/sundials/sundials_config.h)
rmoc_stamp() { stat -c '%y' "$RMOC"; }
stamp_before=$(rmoc_stamp)
echo "SUNDIALS $sundials_version, $(gcc --version | head -1), $("$RMOC" --version) ($RMOC, built $stamp_before)"
[ -n "$OLD" ] && echo "OLD: $("$OLD" --version) ($OLD, built $(stat -c '%y' "$OLD"))"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo

# value NAME FILE: the number after NAME in a "name value" listing
value() { awk -v n="$1" '$1 == n { print $2; exit }' "$2"; }
# reldiff A B: |a - b| / max(|a|, |b|)
reldiff() {
  awk -v a="$1" -v b="$2" 'function abs(x) { return x < 0 ? -x : x }
    BEGIN { m = abs(a) > abs(b) ? abs(a) : abs(b); printf "%.2e\n", (m > 0 ? abs(a - b) / m : 0) }'
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# --- agreement of the final values (a sanity check) ----------------------
echo "### Agreement of phi[1] at t = 1 (C + IDA: rtol 1e-6, atol 1e-8; rmoc: Tolerance 1e-6, atol = 1e-6 x nominal = 1e-6)"
echo
echo "| N | C + IDA | rmoc | relative difference | C error | rmoc error | rmoc --tolerance 1e-10 error |"
echo "|---|---|---|---|---|---|---|"
declare -A cstats=() rstats=()
for n in "${sizes[@]}"; do
  python3 "$GEN" "$n" >"$tmp/chain$n.rmo"
  "$tmp/chain" "$n" "$tmp/c$n.csv" >"$tmp/c$n.out"
  "$RMOC" simulate "$tmp/chain$n.rmo" -o "$tmp/r$n.csv" --print 'phi[1]' --stats >"$tmp/r$n.out" 2>"$tmp/r$n.err"
  cstats[$n]=$(grep '^IDA' "$tmp/c$n.out")
  rstats[$n]=$(head -1 "$tmp/r$n.err")
  a=$(value 'phi[1]' "$tmp/c$n.out")
  b=$(value 'phi[1]' "$tmp/r$n.out")
  d=$(reldiff "$a" "$b")
  ec="" er="" et=""
  if [ "$n" -lt 1000 ]; then
    # errors against IDA at rtol 1e-12, and rmoc at a tight tolerance: if
    # rmoc's default run differs from IDA's only because of its looser atol,
    # the tight run agrees with the reference
    "$tmp/chain_ref" "$n" >"$tmp/ref$n.out"
    r=$(value 'phi[1]' "$tmp/ref$n.out")
    "$RMOC" simulate "$tmp/chain$n.rmo" -o "$tmp/t$n.csv" --tolerance 1e-10 --print 'phi[1]' >"$tmp/t$n.out" 2>/dev/null
    t=$(value 'phi[1]' "$tmp/t$n.out")
    ec=$(reldiff "$a" "$r")
    er=$(reldiff "$b" "$r")
    et=$(reldiff "$t" "$r")
  fi
  echo "| $n | $a | $b | $d | $ec | $er | $et |"
  if ! le "$d" "$AGREE_RTOL"; then
    if [ "$n" -ge 1000 ]; then
      echo "warning: N = $n: phi[1] of rmoc ($b) and IDA ($a) differ by $d > $AGREE_RTOL" >&2
    elif le "$et" "$AGREE_RTOL"; then
      echo "warning: N = $n: phi[1] of rmoc ($b) and IDA ($a) differ by $d > $AGREE_RTOL;" \
        "rmoc at --tolerance 1e-10 agrees with the reference to $et, so the difference is the tolerance" >&2
    else
      echo "error: N = $n: phi[1] of rmoc ($b) and IDA ($a) differ by $d, and rmoc at" \
        "--tolerance 1e-10 differs from the reference by $et; not timing" >&2
      exit 1
    fi
  fi
done
echo
echo "(errors: relative to C + IDA at rtol $REF_RTOL, atol $REF_ATOL; N >= 1000 not checked against a reference)"
echo
for n in "${sizes[@]}"; do
  echo "- N = $n: ${cstats[$n]}"
  echo "- N = $n: rmoc: ${rstats[$n]}; output rows: rmoc $(($(wc -l <"$tmp/r$n.csv") - 1)), C $(($(wc -l <"$tmp/c$n.csv") - 1))"
done
echo

# --- timing ----------------------------------------------------------------
# time_cmd NAME RUNS CMD...: hyperfine mean, sd, min (ms) into $tmp/NAME.t;
# peak resident memory (MB) of one more run into $tmp/NAME.m
time_cmd() {
  local name=$1 runs=$2
  shift 2
  hyperfine -N --warmup "$WARMUP" --runs "$runs" --style none --export-json "$tmp/$name.json" "$*" >/dev/null 2>&1
  jq -r '.results[0] | "\(.mean * 1000) \((.stddev // 0) * 1000) \(.min * 1000)"' "$tmp/$name.json" >"$tmp/$name.t"
  /usr/bin/time -f %M -o "$tmp/$name.kb" "$@" >/dev/null 2>&1
  awk '{ printf "%.1f\n", $1 / 1024 }' "$tmp/$name.kb" >"$tmp/$name.m"
}
field() { awk -v k="$2" '{ print $k }' "$tmp/$1.t"; }
fmt() { awk -v x="$1" 'BEGIN { printf "%.1f", x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

for n in "${sizes[@]}"; do
  runs=$RUNS
  [ "$n" -ge 1000 ] && runs=$RUNS_BIG
  echo "timing N = $n ($runs runs) ..." >&2
  time_cmd "c$n" "$runs" "$tmp/chain" "$n" "$tmp/x.c.csv"
  time_cmd "r$n" "$runs" "$RMOC" simulate "$tmp/chain$n.rmo" -o "$tmp/x.csv"
  if [ -n "$OLD" ] && { [ "$n" -lt 1000 ] || [ "$OLD_BIG" = 1 ]; }; then
    time_cmd "o$n" "$runs" "$OLD" simulate "$tmp/chain$n.rmo" -o "$tmp/x.csv"
  fi
done

echo "### Times (hyperfine -N --warmup $WARMUP, $RUNS runs for N < 1000, $RUNS_BIG for N >= 1000; wall ms per whole command)"
echo
hdr="| N | states | C + IDA mean ± σ | rmoc mean ± σ | rmoc / C | rmoc peak MB | C peak MB |"
sep="|---|---|---|---|---|---|---|"
if [ -n "$OLD" ]; then
  hdr+=" old rmoc mean ± σ | old / rmoc | old peak MB |"
  sep+="---|---|---|"
fi
echo "$hdr"
echo "$sep"
for n in "${sizes[@]}"; do
  row="| $n | $((2 * n)) | $(fmt "$(field "c$n" 1)") ± $(fmt "$(field "c$n" 2)") | $(fmt "$(field "r$n" 1)") ± $(fmt "$(field "r$n" 2)") | **$(ratio "$(field "r$n" 1)" "$(field "c$n" 1)")** | $(cat "$tmp/r$n.m") | $(cat "$tmp/c$n.m") |"
  if [ -n "$OLD" ]; then
    if [ -f "$tmp/o$n.t" ]; then
      row+=" $(fmt "$(field "o$n" 1)") ± $(fmt "$(field "o$n" 2)") | $(ratio "$(field "o$n" 1)" "$(field "r$n" 1)") | $(cat "$tmp/o$n.m") |"
    else
      row+=" (skipped; OLD_BIG=1) | | |"
    fi
  fi
  echo "$row"
done
echo
echo "C + IDA: \`chain N out.csv\` (band LU, analytic Jacobian, writes time, phi, w: 101 rows). rmoc:"
echo "\`rmoc simulate chainN.rmo -o x.csv\` (parse, compile, JIT, solve, write every variable: 101 rows)."
echo
stamp_after=$(rmoc_stamp)
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$stamp_before" != "$stamp_after" ]; then
  echo "warning: $RMOC was rebuilt during the run ($stamp_before -> $stamp_after); rerun for clean numbers"
fi
