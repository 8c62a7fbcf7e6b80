"""Tests of tolerance_study.py on a stand-in whose answers are known (run by
.ci/run: python -m pytest -q examples/reducer).

The stand-in extends tests/hysteresis.rs's play and spring (an output inertia
turned by the torque sequence against a spring beyond free play), with the
reducer's error parameters acting by stated laws: the stiffness falls by
1000 per metre of bearing clearance and rises by 500 per metre of eccentric
radius error, the play grows by 0.1 arcmin per micrometre of clearance and
by 1000 times |dphi| (symmetric in the phase error), and the eccentricity
acts on nothing, or, in the second model, on the stiffness. The script's
table must give those laws back and its trend checks must say which hold.
"""

import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RMOC = os.environ.get("RMOC", os.path.join(ROOT, "target", "release", "rmoc"))

K0 = 1200.0  # N m/arcmin
B0 = 2.0  # arcmin

# tests/models/play_and_spring.rmo (tests/hysteresis.rs's stand-in), with
# the error parameters acting on its stiffness k and play b.
MODELS = open(os.path.join(ROOT, "tests", "models", "play_and_spring.rmo")).read() + """
model StandIn "play and spring whose stiffness and play follow the error parameters by known laws"
  extends PlayAndSpring(k = 1200/arcmin*(1 + 500*dr[1] - 1000*clearance + eccentricityEffect*de[1]),
    b = (2 + 0.1*clearance/1e-6 + 1000*abs(dphi[1]))*arcmin);
  parameter Integer cranks = 2;
  parameter Real dr[cranks] = fill(0, cranks);
  parameter Real de[cranks] = fill(0, cranks);
  parameter Real dphi[cranks] = fill(0, cranks);
  parameter Real clearance = 0;
  parameter Real eccentricityEffect = 0 "relative stiffness change per metre of eccentricity error";
end StandIn;

model EccentricStandIn "the stand-in whose stiffness moves by 2% per 6 um of eccentricity error"
  extends StandIn(eccentricityEffect = 0.02/6e-6);
end EccentricStandIn;
"""


def study(tmp_path, model, *extra):
    path = tmp_path / "standin.rmo"
    path.write_text(MODELS)
    table = tmp_path / f"{model}.json"
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "tolerance_study.py"), "--rmoc", RMOC,
         "--file", str(path), "--model", model, "--out", str(tmp_path / model),
         "--json", str(table), *extra],
        check=True, capture_output=True, text=True,
    ).stdout
    return out, json.loads(table.read_text())


def test_the_table_gives_the_stand_ins_laws_back(tmp_path):
    out, t = study(tmp_path, "StandIn", "--plots")
    rows = {r["condition"]: r for r in t["rows"]}
    nominal = rows["nominal"]
    assert abs(nominal["stiffness_mean"] / K0 - 1) < 2e-3, nominal
    assert abs(nominal["backlash_arcmin"] - B0) < 0.01, nominal
    # Stiffness: -2% at 20 um of clearance, -0.5% at dr = -10 um.
    for label, expected in [("bearing clearance delta_c = 20 um", 0.98), ("bearing clearance delta_c = 10 um", 0.99),
                            ("eccentric radius dr = -10 um", 0.995)]:
        ratio = rows[label]["stiffness_mean"] / nominal["stiffness_mean"]
        assert abs(ratio - expected) < 1e-3, (label, ratio)
    # Play: 2 + 0.1 per um of clearance; +0.58 arcmin at +-120 arcsec.
    assert abs(rows["bearing clearance delta_c = 20 um"]["backlash_arcmin"] - 4.0) < 0.01
    phase_play = B0 + 1000 * 120 * math.pi / 648000  # arcmin
    for label in ["phase dphi = -120 arcsec", "phase dphi = +120 arcsec"]:
        assert abs(rows[label]["backlash_arcmin"] - phase_play) < 0.01, rows[label]
    checks = {c["what"]: c for c in t["checks"]}
    assert all(c["holds"] for c in t["checks"]), t["checks"]
    assert abs(checks["clearance delta_c 0 -> 20 um: backlash x"]["value"] - 2.0) < 0.01
    assert checks["eccentricity +-6 um: largest change of a metric"]["value"] < 1e-3
    assert checks["phase +-120 arcsec: largest difference of + and -"]["value"] < 1e-3
    assert "| bearing clearance delta_c = 20 um |" in out and "DOES NOT HOLD" not in out
    for k in range(len(t["rows"])):
        assert (tmp_path / "StandIn" / f"point_{k}.svg").read_text().startswith("<svg")


def test_a_trend_that_fails_is_reported(tmp_path):
    out, t = study(tmp_path, "EccentricStandIn")
    checks = {c["what"]: c for c in t["checks"]}
    eccentricity = checks["eccentricity +-6 um: largest change of a metric"]
    assert not eccentricity["holds"]
    assert abs(eccentricity["value"] - 0.02) < 2e-3, eccentricity
    assert "eccentricity +-6 um: largest change of a metric: " in out and "DOES NOT HOLD" in out


def test_a_nominal_clearance_is_added_to_every_point(tmp_path):
    # Eq. 29: c' = c_nom + delta_c. With c_nom = 5 um the stand-in's play is
    # 2.5 arcmin at the nominal point and 4.5 at delta_c = 20 um.
    _, t = study(tmp_path, "StandIn", "--nominal-clearance", "5e-6")
    rows = {r["condition"]: r for r in t["rows"]}
    assert abs(rows["nominal"]["backlash_arcmin"] - 2.5) < 0.01, rows["nominal"]
    assert abs(rows["phase dphi = +120 arcsec"]["backlash_arcmin"] - (2.5 + 1000 * 120 * math.pi / 648000)) < 0.01
    assert abs(rows["bearing clearance delta_c = 20 um"]["backlash_arcmin"] - 4.5) < 0.01
    assert t["nominal_clearance"] == 5e-6
    assert abs(rows["bearing clearance delta_c = 20 um"]["simulated"]["clearance"] - 25e-6) < 1e-12
    assert rows["nominal"]["simulated"]["clearance"] == 5e-6
