#!/usr/bin/env bash
# Baseline: rmoc against hand-written C + SUNDIALS IDA on Robertson and the
# pendulum. See README.md beside this file.
#
#   bash benches/ida/run.sh            (from anywhere; RUNS=15 and RMOC=... override)
#
# Needs libsundials-dev (IDA), gcc, hyperfine and jq; installs the missing ones
# with apt-get. Uses the existing rmoc binary; it does not build rmoc.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
RMOC=${RMOC:-target/release/rmoc}
RUNS=${RUNS:-15}
WARMUP=${WARMUP:-2}
# rounds of the interleaved check (0 to skip it)
ROUNDS=${ROUNDS:-40}
# rmoc's final values and IDA's must agree to this relative difference.
AGREE_RTOL=${AGREE_RTOL:-1e-4}

# --- tools -----------------------------------------------------------------
need=()
[ -f /usr/include/ida/ida.h ] || need+=(libsundials-dev)
command -v gcc >/dev/null || need+=(gcc)
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v jq >/dev/null || need+=(jq)
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing: ${need[*]}" >&2
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 ||
    echo "warning: apt-get install failed; continuing with what is there" >&2
fi
[ -f /usr/include/ida/ida.h ] || { echo "error: SUNDIALS IDA headers missing (apt-get install libsundials-dev)" >&2; exit 1; }
# the binary may be in the middle of a rebuild: wait up to two minutes for it
for _ in $(seq 24); do [ -x "$RMOC" ] && break; sleep 5; done
[ -x "$RMOC" ] || { echo "error: $RMOC missing (cargo build --release)" >&2; exit 1; }
have_hyperfine=0
command -v hyperfine >/dev/null && command -v jq >/dev/null && have_hyperfine=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sundials_version=$(sed -n 's/^#define SUNDIALS_VERSION "\(.*\)"/\1/p' /usr/include/sundials/sundials_config.h)
rmoc_stamp() { stat -c '%y' "$RMOC"; }
stamp_before=$(rmoc_stamp)
echo "SUNDIALS $sundials_version, $(gcc --version | head -1), $("$RMOC" --version) ($RMOC, built $stamp_before)"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo

# --- compile the C programs ----------------------------------------------
LIBS=(-lsundials_ida -lsundials_nvecserial -lsundials_sunmatrixdense -lsundials_sunlinsoldense -lm)
models=(robertson pendulum)
declare -A rmo=([robertson]=tests/models/reference/robertson.rmo [pendulum]=tests/models/pendulum.rmo)
declare -A stop=([robertson]=4e10 [pendulum]=5)
declare -A vars=([robertson]="y1 y2 y3" [pendulum]="x y vx vy F E")
for m in "${models[@]}"; do
  gcc -O2 -Wall -Wextra -Werror -o "$tmp/$m" "$here/$m.c" "${LIBS[@]}"
  # a reference solution at a much tighter tolerance, to judge both errors
  gcc -O2 -DRTOL=1e-12 -o "$tmp/${m}_ref" "$here/$m.c" "${LIBS[@]}"
done

# --- agreement of the final values --------------------------------------
# value NAME FILE: the number after NAME in a "name value" listing
value() { awk -v n="$1" '$1 == n { print $2; exit }' "$2"; }
disagree=0
for m in "${models[@]}"; do
  "$tmp/$m" "$tmp/$m.c.csv" >"$tmp/$m.c.out"
  "$tmp/${m}_ref" >"$tmp/$m.ref.out"
  "$RMOC" simulate "${rmo[$m]}" -o "$tmp/$m.rmoc.csv" --stats --quiet --print '**' >"$tmp/$m.rmoc.out" 2>"$tmp/$m.rmoc.err"
  echo "### $m: final values at t = $(awk 'NR == 1 { print $NF }' "$tmp/$m.c.out")"
  echo
  echo "| variable | rmoc | C + IDA | relative difference | rmoc error | IDA error |"
  echo "|---|---|---|---|---|---|"
  for v in ${vars[$m]}; do
    a=$(value "$v" "$tmp/$m.rmoc.out")
    b=$(value "$v" "$tmp/$m.c.out")
    r=$(value "$v" "$tmp/$m.ref.out")
    # relative difference rmoc vs IDA, each one's error against the reference, 0/1 agreement flag
    read -r d ea eb flag < <(awk -v a="$a" -v b="$b" -v r="$r" -v tol="$AGREE_RTOL" '
      function abs(x) { return x < 0 ? -x : x }
      function rel(x, y) { return abs(x - y) / (abs(y) > 0 ? abs(y) : 1e-300) }
      BEGIN {
        d = abs(a - b) / (abs(a) > abs(b) ? abs(a) : abs(b))
        printf "%.2e %.2e %.2e %d\n", d, rel(a, r), rel(b, r), (d <= tol ? 0 : 1)
      }')
    echo "| $v | $a | $b | $d | $ea | $eb |"
    [ "$flag" = 0 ] || { echo "DISAGREE: $m $v rmoc $a vs IDA $b" >&2; disagree=1; }
  done
  echo
  echo "(errors relative to C + IDA at rtol 1e-12; agreement required: relative difference <= $AGREE_RTOL)"
  echo
  echo "- rmoc: $(head -1 "$tmp/$m.rmoc.err")"
  echo "- $(grep '^IDA' "$tmp/$m.c.out")"
  echo "- output rows: rmoc $(($(wc -l <"$tmp/$m.rmoc.csv") - 1)), C $(($(wc -l <"$tmp/$m.c.csv") - 1))"
  echo
done
if [ "$disagree" = 1 ]; then
  echo "error: rmoc and C + IDA disagree; not timing" >&2
  exit 1
fi

# --- timing ----------------------------------------------------------------
# time NAME CMD...: mean, sd, min (ms) and user+system CPU (ms) into $tmp/NAME.t
time_cmd() {
  local name=$1
  shift
  if [ "$have_hyperfine" = 1 ]; then
    hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --style none --export-json "$tmp/$name.json" "$*" >/dev/null 2>&1
    jq -r '.results[0] | "\(.mean * 1000) \(.stddev * 1000) \(.min * 1000) \((.user + .system) * 1000)"' "$tmp/$name.json" >"$tmp/$name.t"
  else
    local i t0 t1 all=()
    for ((i = 0; i < WARMUP; i++)); do "$@" >/dev/null 2>&1; done
    for ((i = 0; i < RUNS; i++)); do
      t0=$(date +%s%N)
      "$@" >/dev/null 2>&1
      t1=$(date +%s%N)
      all+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${all[@]}" | awk '{ s += $1; q += $1 * $1; if (NR == 1 || $1 < mn) mn = $1 }
      END { m = s / NR; v = q / NR - m * m; printf "%f %f %f nan\n", m / 1000, sqrt(v > 0 ? v : 0) / 1000, mn / 1000 }' >"$tmp/$name.t"
  fi
}
field() { awk -v k="$2" '{ print $k }' "$tmp/$1.t"; }
fmt() { awk -v x="$1" 'BEGIN { if (x == "nan") print "n/a"; else printf "%.1f", x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

for m in "${models[@]}"; do
  time_cmd "$m.c" "$tmp/$m" "$tmp/$m.x.csv"
  time_cmd "$m.cnocsv" "$tmp/$m"
  time_cmd "$m.rmoc" "$RMOC" simulate "${rmo[$m]}" -o "$tmp/x.csv"
  time_cmd "$m.gcc" gcc -O2 -o "$tmp/$m.gcc" "$here/$m.c" "${LIBS[@]}"
done
time_cmd floor.rmoc "$RMOC" --version

echo "### Times ($([ "$have_hyperfine" = 1 ] && echo "hyperfine -N --warmup $WARMUP --runs $RUNS" || echo "shell loop, $RUNS runs"); wall times in ms)"
echo
echo "| problem | command | mean ± σ | min | user+sys CPU | rmoc / this (mean) | rmoc / this (min) |"
echo "|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  rm_mean=$(field "$m.rmoc" 1)
  rm_min=$(field "$m.rmoc" 3)
  for what in c cnocsv rmoc gcc; do
    case $what in
      c) label="C + IDA: \`$m out.csv\` (solve, write the same CSV)" ;;
      cnocsv) label="C + IDA: \`$m\` (solve, final values only, no CSV)" ;;
      rmoc) label="rmoc: \`rmoc simulate\` (parse, compile, JIT, solve, write CSV)" ;;
      gcc) label="context: \`gcc -O2\` of $m.c" ;;
    esac
    mean=$(field "$m.$what" 1)
    sd=$(field "$m.$what" 2)
    mn=$(field "$m.$what" 3)
    cpu=$(field "$m.$what" 4)
    if [ "$what" = c ]; then
      rr="**$(ratio "$rm_mean" "$mean")**"
      rrm=$(ratio "$rm_min" "$mn")
    elif [ "$what" = cnocsv ]; then
      rr=$(ratio "$rm_mean" "$mean")
      rrm=$(ratio "$rm_min" "$mn")
    else
      rr=""
      rrm=""
    fi
    echo "| $m | $label | $(fmt "$mean") ± $(fmt "$sd") | $(fmt "$mn") | $(fmt "$cpu") | $rr | $rrm |"
  done
  both=$(awk -v a="$(field "$m.gcc" 1)" -v b="$(field "$m.c" 1)" 'BEGIN { print a + b }')
  echo "| $m | context: gcc + C + IDA run | $(fmt "$both") | | | $(ratio "$rm_mean" "$both") | |"
done
echo "| - | context: \`rmoc --version\` (process start) | $(fmt "$(field floor.rmoc 1)") ± $(fmt "$(field floor.rmoc 2)") | $(fmt "$(field floor.rmoc 3)") | $(fmt "$(field floor.rmoc 4)") | | |"
echo
echo "Target: rmoc / (C + IDA) <= 1.5 (bold: both commands write the same 501-row CSV)."
echo

# --- interleaved check --------------------------------------------------------
# hyperfine runs one command's runs back to back, so a change in the machine's
# load between two commands biases their ratio (this benchmark's machine is
# shared). Here each round runs every command once; the medians are robust to
# drifting load. Times include bash's fork+exec, like hyperfine -N.
if [ "$ROUNDS" -gt 0 ]; then
  declare -A samples=()
  keys=()
  for m in "${models[@]}"; do keys+=("$m.c" "$m.cnocsv" "$m.rmoc"); done
  declare -A icmd=()
  for m in "${models[@]}"; do
    icmd[$m.c]="$tmp/$m $tmp/$m.x.csv"
    icmd[$m.cnocsv]="$tmp/$m"
    icmd[$m.rmoc]="$RMOC simulate ${rmo[$m]} -o $tmp/x.csv"
  done
  for ((r = 0; r < ROUNDS; r++)); do
    for k in "${keys[@]}"; do
      t0=$EPOCHREALTIME
      ${icmd[$k]} >/dev/null 2>&1
      t1=$EPOCHREALTIME
      samples[$k]+="$t0 $t1 "
    done
  done
  median() { printf '%s\n' ${samples[$1]} | paste - - | awk '{ print ($2 - $1) * 1000 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  echo "### Interleaved check ($ROUNDS rounds, each running every command once; median wall ms)"
  echo
  echo "| problem | C + IDA, same CSV | C + IDA, no CSV | rmoc simulate | rmoc / C (same CSV) | rmoc / C (no CSV) |"
  echo "|---|---|---|---|---|---|"
  for m in "${models[@]}"; do
    a=$(median "$m.c")
    b=$(median "$m.cnocsv")
    c=$(median "$m.rmoc")
    echo "| $m | $(fmt "$a") | $(fmt "$b") | $(fmt "$c") | **$(ratio "$c" "$a")** | $(ratio "$c" "$b") |"
  done
  echo
fi

# --- where rmoc's time goes -------------------------------------------------
echo "### Where rmoc's time goes: the same command cut short (mean wall ms; each row adds to the one above)"
echo
echo "| problem | \`--version\` (process start) | \`analyze\` (+ parse, flatten, index reduction, BLT) | \`simulate --stop-time 0\` (+ lower, JIT, initialize, write) | \`simulate --interval STOP\` (+ integrate, 1 output row) | \`simulate\` (+ 500 output rows) |"
echo "|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  time_cmd "$m.analyze" "$RMOC" analyze "${rmo[$m]}"
  time_cmd "$m.stop0" "$RMOC" simulate "${rmo[$m]}" --stop-time 0 -o "$tmp/x.csv"
  time_cmd "$m.oneint" "$RMOC" simulate "${rmo[$m]}" --interval "${stop[$m]}" -o "$tmp/x.csv"
  echo "| $m | $(fmt "$(field floor.rmoc 1)") | $(fmt "$(field "$m.analyze" 1)") | $(fmt "$(field "$m.stop0" 1)") | $(fmt "$(field "$m.oneint" 1)") | $(fmt "$(field "$m.rmoc" 1)") |"
done
echo
echo "### rmoc phases (RMOC_TIMING=1 --stats, one run each)"
echo
for m in "${models[@]}"; do
  echo "$m:"
  RMOC_TIMING=1 "$RMOC" simulate "${rmo[$m]}" -o "$tmp/x.csv" --stats 2>&1 >/dev/null | grep -v '^  ' | sed 's/^/    /'
done
echo
stamp_after=$(rmoc_stamp)
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$stamp_before" != "$stamp_after" ]; then
  echo "warning: $RMOC was rebuilt during the run ($stamp_before -> $stamp_after); rerun for clean numbers"
fi
