#!/usr/bin/env python3
"""Combines SPlisHSPlasH's timings (bench/splash_timing.py) with `pbf bench --json` into one table
and one JSON file. Called by bench/side_by_side.sh inside bench/.venv; standard library only.

usage: side_by_side_report.py --pbf PBF.json --peer CASE=PEER.json [--peer ...] --out OUT.json
       side_by_side_report.py --method NAME=PBF.json,PEER.json [--method ...]
                              [--ladder NAME=TOL,PBF.json ...] --out OUT.json
"""
import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def speedup(runs, threads):
    """ms/step at 1 thread over ms/step at `threads` (None where either is missing)."""
    one = [r for r in runs if r.get("ok") and r["threads"] == 1]
    many = [r for r in runs if r.get("ok") and r["threads"] == threads]
    if not one or not many:
        return None
    return one[-1]["ms_per_step_mean"] / many[-1]["ms_per_step_mean"]


def check_targets(a, pbf, rows):
    """The performance targets, each with its measured figure and whether it is met."""
    t = []
    med = [x for x in rows if x["case"] == "medium"]
    threads = med[-1]["threads"] if med else "N (medium not run)"
    t.append(("pbf / SPlisHSPlasH at 59,319 particles, %s threads" % threads, ">= 5",
              med[-1]["ratio_pbf_over_peer"] if med else None, lambda v: v >= 5.0, "%.2fx"))
    med_runs = [r for r in pbf["runs"] if r["case"] == "medium"]
    t.append(("speed-up 1 -> %s threads at 59,319 particles" % threads, ">= 1.9",
              speedup(med_runs, threads) if med else None, lambda v: v >= 1.9, "%.2fx"))
    big = load(a.pbf_1m) if a.pbf_1m else None
    big_runs = [r for r in big["runs"] if r.get("ok")] if big else []
    top = max((r["threads"] for r in big_runs), default=None)
    at_top = [r for r in big_runs if r["threads"] == top]
    t.append(("s per step at 1,000,000 particles, %s threads" % top, "<= 0.5",
              at_top[-1]["ms_per_step_mean"] / 1000.0 if at_top else None,
              lambda v: v <= 0.5, "%.3f s"))
    t.append(("speed-up 1 -> %s threads at 1,000,000 particles" % top, ">= 1.9",
              speedup(big_runs, top) if top else None, lambda v: v >= 1.9, "%.2fx"))
    t.append(("peak resident bytes per particle at 1,000,000", "<= 128",
              max(r["rss_bytes_per_particle"] for r in big_runs) if big_runs else None,
              lambda v: v <= 128.0, "%.1f B"))
    huge = load(a.pbf_10m) if a.pbf_10m else None
    ok10 = bool(huge and any(r.get("ok") for r in huge["runs"]))
    t.append(("a 10,000,000-particle block runs", "runs",
              1.0 if ok10 else 0.0, lambda v: v == 1.0, "%.0f"))
    print()
    print("targets:")
    out = []
    for name, goal, value, ok, fmt in t:
        met = value is not None and ok(value)
        shown = "-" if value is None else (("yes" if value else "no") if goal == "runs" else fmt % value)
        print("  %-52s %-8s %10s   %s" % (name, goal, shown, "met" if met else "NOT met"))
        out.append({"target": name, "goal": goal, "value": value, "met": met})
    return out


def methods_report(a) -> int:
    """--method NAME=PBF.json,PEER.json: one row per pressure solver, both programs."""
    rows = []
    machine = build = date = None
    for item in a.method:
        name, files = item.split("=", 1)
        pbf_path, peer_path = files.split(",", 1)
        pbf, peer = load(pbf_path), load(peer_path)
        runs = [r for r in (pbf or {}).get("runs", []) if r.get("ok")]
        if not runs or not peer:
            print(f"side_by_side: {name}: no result (pbf {bool(runs)}, SPlisHSPlasH {bool(peer)})",
                  file=sys.stderr)
            continue
        r = runs[-1]
        machine, build, date = pbf.get("machine"), pbf.get("build"), pbf.get("date")
        dt = pbf.get("settings", {}).get("dt") or peer["dt"]
        rows.append({
            "method": name,
            "dt": peer["dt"],
            "threads": r["threads"],
            "particles_pbf": r["particles"],
            "particles_peer": peer.get("particles"),
            "steps": r["steps"],
            "warmup_steps": r["warmup_steps"],
            "simulated_time_s_pbf": r.get("simulated_time_s"),
            "simulated_time_s_peer": peer.get("simulated_time_s"),
            "pbf_ms_per_step_mean": r["ms_per_step_mean"],
            "pbf_ms_per_step_median": r["ms_per_step_median"],
            "peer_ms_per_step_mean": peer["ms_per_step_mean"],
            "peer_ms_per_step_median": peer["ms_per_step_median"],
            "pbf_s_per_simulated_s": r["ms_per_step_mean"] / 1000.0 / dt,
            "peer_s_per_simulated_s": peer["ms_per_step_mean"] / 1000.0 / peer["dt"],
            "ratio_pbf_over_peer": peer["ms_per_step_mean"] / r["ms_per_step_mean"]
                                   * (dt / peer["dt"]) * (r["particles"] / peer["particles"]),
            "pbf_substeps_per_step": r.get("substeps_per_step"),
            "pbf_iterations_per_step": r.get("iterations_per_step"),
            "pbf_divergence_iterations_per_step": r.get("divergence_iterations_per_step"),
            "peer_iterations_per_step": peer.get("iterations_per_step"),
            "peer_divergence_iterations_per_step": peer.get("divergence_iterations_per_step"),
            "pbf_solver_error": r.get("solver_error"),
            "pbf_density_error_avg_max": [r["density_error_avg"], r["density_error_max"]],
            "peer_density_error_avg_max": [peer.get("density_error_avg"),
                                           peer.get("density_error_max")],
            "peer_settings": peer.get("peer_settings"),
            "pbf_settings": pbf.get("settings"),
            "peer_tool": peer.get("tool"),
        })

    # the matched-error figure: the loosest ladder tolerance whose measured average density
    # error is at most the peer's measured one (None when none is)
    ladder = {}
    for item in a.ladder:
        name, rest = item.split("=", 1)
        tol, path = rest.split(",", 1)
        lr = [r for r in (load(path) or {}).get("runs", []) if r.get("ok")]
        if lr:
            ladder.setdefault(name, []).append((float(tol), lr[-1]))
    for x in rows:
        if x["method"] in ladder:  # the same-tolerance run is the ladder's first rung
            ladder[x["method"]].append((float(a.tolerance), {
                "ms_per_step_mean": x["pbf_ms_per_step_mean"], "particles": x["particles_pbf"],
                "iterations_per_step": x["pbf_iterations_per_step"],
                "divergence_iterations_per_step": x["pbf_divergence_iterations_per_step"],
                "density_error_avg": x["pbf_density_error_avg_max"][0],
                "density_error_max": x["pbf_density_error_avg_max"][1]}))
        pe = x["peer_density_error_avg_max"][0]
        cands = [(t, r) for t, r in ladder.get(x["method"], [])
                 if pe is not None and r["density_error_avg"] <= pe]
        if x["method"] not in ladder:
            continue
        x["matched_error_ladder"] = [
            {"tolerance_pct": t, "pbf_ms_per_step_mean": r["ms_per_step_mean"],
             "pbf_iterations_per_step": r.get("iterations_per_step"),
             "pbf_divergence_iterations_per_step": r.get("divergence_iterations_per_step"),
             "pbf_density_error_avg_max": [r["density_error_avg"], r["density_error_max"]]}
            for t, r in sorted(ladder[x["method"]], key=lambda c: c[0])]
        if not cands:
            x["matched_error"] = None
            continue
        t, r = max(cands, key=lambda c: c[0])
        x["matched_error"] = {
            "what": "pbf at the loosest tolerance of the ladder whose measured average density "
                    "error is at most SPlisHSPlasH's measured average (same dt, scene, threads; "
                    "the peer at the same-tolerance settings)",
            "tolerance_pct": t,
            "pbf_ms_per_step_mean": r["ms_per_step_mean"],
            "pbf_iterations_per_step": r.get("iterations_per_step"),
            "pbf_divergence_iterations_per_step": r.get("divergence_iterations_per_step"),
            "pbf_density_error_avg_max": [r["density_error_avg"], r["density_error_max"]],
            "ratio_pbf_over_peer": x["peer_ms_per_step_mean"] / r["ms_per_step_mean"]
                                   * (r["particles"] / x["particles_peer"]),
        }

    def it(x, y):
        if not x:
            return "-"
        return "%.1f" % x + ("+%.1f" % y if y else "")

    print()
    print("side by side per method: same scene, particles, fixed dt, simulated time, tolerance "
          "(%s %%), min/max iterations and threads; ratio = SPlisHSPlasH's time per simulated "
          "second over pbf's (> 1: pbf faster)" % a.tolerance)
    hdr = ("method", "dt s", "pbf ms/st", "spl ms/st", "pbf s/sim s", "spl s/sim s", "ratio",
           "pbf it", "spl it", "pbf err avg/max %", "spl err avg/max %")
    print("%-7s %7s %9s %9s %11s %11s %6s %9s %9s %17s %17s" % hdr)
    for x in rows:
        pe = x["peer_density_error_avg_max"]
        print("%-7s %7.4f %9.2f %9.2f %11.2f %11.2f %6.2f %9s %9s %17s %17s" % (
            x["method"], x["dt"], x["pbf_ms_per_step_mean"], x["peer_ms_per_step_mean"],
            x["pbf_s_per_simulated_s"], x["peer_s_per_simulated_s"], x["ratio_pbf_over_peer"],
            it(x["pbf_iterations_per_step"], x["pbf_divergence_iterations_per_step"]),
            it(x["peer_iterations_per_step"], x["peer_divergence_iterations_per_step"]),
            "%.3f/%.2f" % tuple(x["pbf_density_error_avg_max"]),
            "%.3f/%.2f" % tuple(pe) if pe[0] is not None else "-"))
        if x["particles_peer"] != x["particles_pbf"]:
            print(f"  note: particle counts differ ({x['particles_pbf']} vs {x['particles_peer']})")
        if x["pbf_substeps_per_step"] and x["pbf_substeps_per_step"] > 1.005:
            print(f"  note: pbf split its steps into {x['pbf_substeps_per_step']:.2f} substeps")
    matched = [x for x in rows if "matched_error" in x]
    if matched:
        print()
        print("matched error: pbf at the loosest tolerance of %s %% whose measured average "
              "density error is <= SPlisHSPlasH's measured average (SPlisHSPlasH as above, at the "
              "same tolerance); the same-tolerance ratio above stays the headline" % a.ladder_text)
        print("%-7s %8s %9s %9s %14s %9s %17s %17s" % ("method", "pbf tol", "pbf ms/st",
              "spl ms/st", "matched ratio", "pbf it", "pbf err avg/max %", "spl err avg/max %"))
        for x in matched:
            m, pe = x["matched_error"], x["peer_density_error_avg_max"]
            if m is None:
                print("%-7s  no tolerance of the ladder reached SPlisHSPlasH's error" % x["method"])
                continue
            print("%-7s %8g %9.2f %9.2f %14.2f %9s %17s %17s" % (
                x["method"], m["tolerance_pct"], m["pbf_ms_per_step_mean"],
                x["peer_ms_per_step_mean"], m["ratio_pbf_over_peer"],
                it(m["pbf_iterations_per_step"], m["pbf_divergence_iterations_per_step"]),
                "%.3f/%.2f" % tuple(m["pbf_density_error_avg_max"]), "%.3f/%.2f" % tuple(pe)))
    print("(ms/st: mean wall time per step; it: solver iterations per step (+ divergence); "
          "density error: mean/max of max(rho/rho0 - 1, 0) at the last step)")
    out = {
        "tool": "bench/side_by_side.sh --methods",
        "date": date,
        "machine": machine,
        "pbf_build": build,
        "tolerance_pct": float(a.tolerance),
        "load_average_at_end": list(os.getloadavg()),
        "load_note": "the machine's 1/5/15-minute load averages when the report was written "
                     "(other work on a shared machine slows both programs, not always equally)",
        "pbf_same_physics": "pbf runs with vorticity = 0 (SPlisHSPlasH's scenes have no vorticity "
                            "confinement); both programs keep their viscosity of 0.01",
        "comparison": rows,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwritten: {a.out}")
    return 0 if rows else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pbf")
    ap.add_argument("--method", action="append", default=[],
                    help="NAME=PBF.json,PEER.json: a pressure solver on both programs")
    ap.add_argument("--tolerance", default="0.1", help="the density error tolerance (%%), a label")
    ap.add_argument("--peer", action="append", default=[], help="CASE=FILE")
    ap.add_argument("--ladder", action="append", default=[],
                    help="NAME=TOL,PBF.json: pbf's method NAME again at tolerance TOL (%%)")
    ap.add_argument("--ladder-text", default="0.1/0.2/0.5/1/2",
                    help="the ladder's tolerances, for the printed label")
    ap.add_argument("--out", required=True)
    ap.add_argument("--peer-log", action="append", default=[],
                    help="CASE=VALUE: SPlisHSPlasH's own 'Average time: SimStep' (ms, all steps)")
    ap.add_argument("--targets", action="store_true", help="print the performance targets")
    ap.add_argument("--pbf-1m", help="pbf bench --json of --particles 1000000 (1 and N threads)")
    ap.add_argument("--pbf-10m", help="pbf bench --json of --particles 10000000")
    a = ap.parse_args()
    if a.method:
        return methods_report(a)
    if not a.pbf:
        ap.error("--pbf or --method is required")

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

    targets = check_targets(a, pbf, rows) if a.targets else None

    out = {
        "tool": "bench/side_by_side.sh",
        "targets": targets,
        "date": pbf.get("date"),
        "machine": pbf.get("machine"),
        "pbf_build": pbf.get("build"),
        "peer": {case: {k: v for k, v in p.items()} for case, p in peers.items()},
        "pbf": pbf,
        "pbf_same_physics": "pbf runs with vorticity = 0 (SPlisHSPlasH's scenes have no vorticity "
                            "confinement); both programs keep their viscosity of 0.01",
        "comparison": rows,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwritten: {a.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
