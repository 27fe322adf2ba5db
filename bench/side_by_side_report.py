#!/usr/bin/env python3
"""Combines SPlisHSPlasH's timings (bench/splash_timing.py) with `pbf bench --json` into one table
and one JSON file. Called by bench/side_by_side.sh inside bench/.venv; standard library only.

usage: side_by_side_report.py --pbf PBF.json --peer CASE=PEER.json [--peer ...] --out OUT.json
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pbf", required=True)
    ap.add_argument("--peer", action="append", default=[], help="CASE=FILE")
    ap.add_argument("--out", required=True)
    ap.add_argument("--peer-log", action="append", default=[],
                    help="CASE=VALUE: SPlisHSPlasH's own 'Average time: SimStep' (ms, all steps)")
    a = ap.parse_args()

    with open(a.pbf) as f:
        pbf = json.load(f)
    peers = {}
    for item in a.peer:
        case, path = item.split("=", 1)
        with open(path) as f:
            peers[case] = json.load(f)
    own = {}
    for item in a.peer_log:
        case, value = item.split("=", 1)
        try:
            own[case] = float(value)
        except ValueError:
            pass

    rows = []
    for case, peer in peers.items():
        runs = [r for r in pbf["runs"] if r["case"] == case and r.get("ok")]
        if not runs:
            print(f"side_by_side: no pbf result for case {case}", file=sys.stderr)
            continue
        r = runs[-1]
        rows.append({
            "case": case,
            "threads": r["threads"],
            "particles_pbf": r["particles"],
            "particles_peer": peer.get("particles"),
            "steps": r["steps"],
            "warmup_steps": r["warmup_steps"],
            "pbf_ms_per_step_mean": r["ms_per_step_mean"],
            "pbf_ms_per_step_min": r["ms_per_step_min"],
            "peer_ms_per_step_mean": peer["ms_per_step_mean"],
            "peer_ms_per_step_min": peer["ms_per_step_min"],
            "peer_own_simstep_avg_ms_all_steps": own.get(case),
            "pbf_particle_steps_per_s": r["particle_steps_per_s"],
            "peer_particle_steps_per_s": peer["particle_steps_per_s"],
            "ratio_pbf_over_peer": r["particle_steps_per_s"] / peer["particle_steps_per_s"],
            "pbf_density_error_avg_max": [r["density_error_avg"], r["density_error_max"]],
            "peer_density_error_avg_max": [peer.get("density_error_avg"),
                                           peer.get("density_error_max")],
        })

    print()
    print("side by side: same geometry, dt, iterations, steps and threads; "
          "ratio = pbf particle-steps/s over SPlisHSPlasH's (splash; > 1: pbf faster)")
    hdr = ("case", "thr", "particles", "steps", "pbf ms/step", "splash ms/step", "pbf Mpst/s",
           "splash Mpst/s", "ratio", "pbf dens.err", "splash dens.err")
    print("%-7s %3s %9s %5s %11s %12s %10s %11s %7s %15s %15s" % hdr)
    for x in rows:
        pe = x["peer_density_error_avg_max"]
        pe_s = "%.2f/%.2f%%" % tuple(pe) if pe[0] is not None else "-"
        print("%-7s %3d %9d %5d %11.3f %12.3f %10.3f %11.3f %7.2f %15s %15s" % (
            x["case"], x["threads"], x["particles_pbf"], x["steps"], x["pbf_ms_per_step_mean"],
            x["peer_ms_per_step_mean"], x["pbf_particle_steps_per_s"] / 1e6,
            x["peer_particle_steps_per_s"] / 1e6, x["ratio_pbf_over_peer"],
            "%.2f/%.2f%%" % tuple(x["pbf_density_error_avg_max"]), pe_s))
        if x["particles_peer"] != x["particles_pbf"]:
            print(f"  note: particle counts differ ({x['particles_pbf']} vs {x['particles_peer']})")
    print("(ms/step: mean wall time of the measured steps; SPlisHSPlasH's from its per-step callback; "
          "density error: mean/max of max(rho/rho0 - 1, 0) at the last step)")

    out = {
        "tool": "bench/side_by_side.sh",
        "date": pbf.get("date"),
        "machine": pbf.get("machine"),
        "pbf_build": pbf.get("build"),
        "peer": {case: {k: v for k, v in p.items()} for case, p in peers.items()},
        "pbf": pbf,
        "comparison": rows,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwritten: {a.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
