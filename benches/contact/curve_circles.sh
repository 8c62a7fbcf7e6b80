#!/bin/bash
# Screening of Contact.CurveCircles (issue 18, acceptance 2): the cost of
# one model evaluation of m circles against a curve of nseg segments, with
# the screening (block skip and eq. 34) and by brute force, and how it
# grows with m.
#
#   RMOC=target/release/rmoc bash benches/contact/curve_circles.sh [nseg] [m ...]
#
# BRUTE=0 leaves out the brute-force runs (they take 17 s at m = 200).
# POLAR=1 screens by the polar angle instead of the blocks (the curve
# turns once round the ground's origin), SMOOTH=1 takes the smooth
# (quadratic) segments.
#
# The model: a regular polygon of nseg sides inscribed in a circle of 50 mm
# (fixed), and m circles of 0.5 mm on closed-form paths that graze it (each
# in contact part of the time). No states: every output row is one model
# evaluation, so simulate time / model evaluations is the cost of one
# evaluation (the rows are written by another thread). Prints one line per
# run: m, screening, evaluations, simulate ms, us per evaluation, the
# segments examined in the last row.
set -euo pipefail
RMOC=${RMOC:-target/release/rmoc}
nseg=${1:-5000}
shift || true
ms=${@:-50 100 200}
polar=false
[ "${POLAR:-0}" = 1 ] && polar=true
smooth=false
[ "${SMOOTH:-0}" = 1 ] && smooth=true
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for m in $ms; do
  cat > "$dir/ring.rmo" <<MODEL
model Mover "a frame on a closed-form path grazing the ring"
  parameter Real R;
  parameter Real j;
  parameter Integer m;
  Mechanics.Planar.Frame frame;
equation
  frame.x = (R + 0.0004 + 0.0003*sin(3*time + j))*cos(time + 6.283185307179586*j/m);
  frame.y = (R + 0.0004 + 0.0003*sin(3*time + j))*sin(time + 6.283185307179586*j/m);
  frame.phi = 0;
end Mover;

model Ring
  parameter Integer nseg = $nseg;
  parameter Real R = 0.05;
  parameter Integer m = $m;
  parameter Boolean screening = true;
  parameter Real curve[nseg + 1, 2] = {{R*cos(2*3.141592653589793*i/nseg), R*sin(2*3.141592653589793*i/nseg)} for i in 0:nseg};
  Mechanics.Planar.Fixed ground;
  Contact.CurveCircles contact(m = m, curve = curve, r = fill(0.0005, m), k = 1e9, screening = screening, polar = $polar, smooth = $smooth);
  Mover mv[m](each R = R, j = 1:m, each m = m);
equation
  connect(ground.frame, contact.frame_curve);
  for j in 1:m loop
    connect(mv[j].frame, contact.frame_circle[j]);
  end for;
  annotation(experiment(StopTime = 1, Interval = 0.002));
end Ring;
MODEL
  sides="true false"
  [ "${BRUTE:-1}" = 0 ] && sides=true
  for s in $sides; do
    out=$("$RMOC" simulate "$dir/ring.rmo" --model Ring -p screening=$s -q -o "$dir/r.csv" --stats --print contact.examined 2>&1)
    evals=$(echo "$out" | sed -n 's/^model evaluations \([0-9]*\).*/\1/p')
    sim=$(echo "$out" | sed -n 's/.*simulate \([0-9.]*\) ms.*/\1/p')
    examined=$(echo "$out" | awk '$1 == "contact.examined" {print $2}')
    python3 -c "print(f'm {$m:4d}  screening {\"$s\":5s}  polar {\"$polar\":5s}  smooth {\"$smooth\":5s}  evaluations {$evals}  simulate {$sim} ms  {1000*$sim/$evals:9.1f} us/evaluation  examined {float(\"$examined\"):.0f} of {$m*$nseg}')"
  done
done
