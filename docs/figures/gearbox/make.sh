#!/bin/bash
# Kosenko and Gusev's Figs. 3-5 (seed 001, section 7.2-7.3) from
# examples/gearbox.rmo, into docs/figures/gearbox/:
#
#   RMOC=target/release/rmoc bash docs/figures/gearbox/make.sh
#
# Fig. 3: the DTE Delta and the penetration depth |PA PB| (= -kappa) over
#         time: one curve, as the paper's identity Delta == kappa says.
# Fig. 4: the DTE without friction (its systematic part: the Johnson
#         contact's compliance) and with Coulomb friction f = 0.3 (the
#         periodic part added, with jumps at the pair changes and the pitch
#         point).
# Fig. 5: the normal contact force of the Johnson contact and of the rigid
#         contact: the same dynamics, the compliant one ringing around the
#         rigid one.
set -euo pipefail
cd "$(dirname "$0")/../../.."
RMOC=${RMOC:-target/release/rmoc}
out=docs/figures/gearbox
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
"$RMOC" simulate examples/gearbox.rmo --model Gearbox -q -o "$runs/with_friction.csv"
"$RMOC" simulate examples/gearbox.rmo --model GearboxFrictionless -q -o "$runs/without_friction.csv"
"$RMOC" simulate examples/gearbox.rmo --model GearboxRigid -q -o "$runs/rigid.csv"
cp "$runs/with_friction.csv" "$runs/johnson.csv"
"$RMOC" plot "$runs/with_friction.csv" Delta depth \
  --title "Fig. 3: the DTE Delta and the penetration depth coincide" -o "$out/fig3_delta_depth.png"
"$RMOC" plot "$runs/without_friction.csv" Delta --also "$runs/with_friction.csv" \
  --title "Fig. 4: the DTE without and with friction (f = 0.3)" -o "$out/fig4_dte_friction.png"
"$RMOC" plot "$runs/johnson.csv" normalForce --also "$runs/rigid.csv" --from 0.5 \
  --title "Fig. 5: normal force, Johnson contact and rigid contact" -o "$out/fig5_johnson_rigid.png"
echo "wrote $out/fig3_delta_depth.png, fig4_dte_friction.png, fig5_johnson_rigid.png"
