#!/usr/bin/env python3
"""Combines SPlisHSPlasH's timings (bench/splash_timing.py) with `pbf bench --json` into one table
and one JSON file. Called by bench/side_by_side.sh inside bench/.venv; standard library only.

usage: side_by_side_report.py --pbf PBF.json --pbf-default PBF_DEFAULTS.json [--pbf ... per repeat]
            --peer CASE=PEER.json [--peer ...] --out OUT.json [--targets --pbf-1m F --pbf-1m-default F
            (each per repeat) --pbf-10m F]
       side_by_side_report.py --method NAME=PBF.json,PEER.json[,PBF_DEFAULTS.json] [--method ...]
            [--ladder NAME=TOL,PBF.json ...] --out OUT.json

PBF.json: pbf with SPlisHSPlasH's physics (--set vorticity=0; its scene runs no vorticity
confinement), the figure the targets are judged on; PBF_DEFAULTS.json: pbf's defaults (vorticity
confinement on). Both are printed and written, each labelled. --ladder: pbf's method NAME again at
a looser tolerance TOL, for the matched-error figure. With --method, PBF.json and PEER.json may
each be a '+'-joined list, the pairs of --repeat in order: the ratio is then the median of the
pairs' ratios and the times the medians.
"""
import argparse
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


PHYSICS = {
    "splishsplash": "SPlisHSPlasH's physics (pbf --set vorticity=0: no vorticity confinement, as its "
            "scene; XSPH 0.01 against its Standard viscosity 0.01)",
    "defaults": "pbf's defaults (vorticity confinement 0.01 on, which SPlisHSPlasH's scene does "
                "not run; XSPH 0.01)",
}


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def runs_of(docs, case=None, threads=None):
    """The ok runs of every document in docs (one per repeat), by case and thread count."""
    out = []
    for d in docs:
        for r in (d or {}).get("runs", []):
            if r.get("ok") and (case is None or r["case"] == case) and \
                    (threads is None or r["threads"] == threads):
                out.append(r)
    return out


def speedup(docs, case, threads):
    """Median over repeats of ms/step at 1 thread over ms/step at `threads` (None if missing)."""
    ratios = []
    for d in docs:
        one, many = runs_of([d], case, 1), runs_of([d], case, threads)
        if one and many:
            ratios.append(one[-1]["ms_per_step_mean"] / many[-1]["ms_per_step_mean"])
    return median(ratios)


def check_targets(a, rows):
    """The performance targets, each with its measured figure and whether it is met: judged on
    SPlisHSPlasH's physics (vorticity 0), and shown again with pbf's defaults."""
    t = []
    threads = None
    for physics, docs, big_path in (("splishsplash", a.pbf_docs, a.pbf_1m),
                                    ("defaults", a.pbf_default_docs, a.pbf_1m_default)):
        label = "same physics as SPlisHSPlasH" if physics == "splishsplash" else "pbf defaults"
        med = [x for x in rows if x["case"] == "medium" and x["physics"] == physics]
        threads = med[-1]["threads"] if med else "N (medium not run)"
        t.append((physics, "pbf / SPlisHSPlasH at 59,319 particles, %s threads (%s)"
                  % (threads, label), ">= 5", med[-1]["ratio_pbf_over_peer"] if med else None,
                  lambda v: v >= 5.0, "%.2fx"))
        t.append((physics, "speed-up 1 -> %s threads at 59,319 particles (%s)" % (threads, label),
                  ">= 1.9", speedup(docs, "medium", threads) if med else None,
                  lambda v: v >= 1.9, "%.2fx"))
        # 1M: one pbf bench per repeat (1 and N threads each); the medians over the repeats,
        # as for 59k, so that one slow stretch of a shared VM does not decide a figure
        bigs = [d for d in (load(p) for p in (big_path or [])) if d]
        big_runs = runs_of(bigs)
        top = max((r["threads"] for r in big_runs), default=None)
        at_top = [runs_of([d], None, top)[-1]["ms_per_step_mean"] for d in bigs
                  if runs_of([d], None, top)]
        t.append((physics, "s per step at 1,000,000 particles, %s threads (%s)" % (top, label),
                  "<= 0.5", median(at_top) / 1000.0 if at_top else None,
                  lambda v: v <= 0.5, "%.3f s"))
        t.append((physics, "speed-up 1 -> %s threads at 1,000,000 particles (%s)" % (top, label),
                  ">= 1.9", speedup(bigs, None, top) if top else None,
                  lambda v: v >= 1.9, "%.2fx"))
        t.append((physics, "peak resident bytes per particle at 1,000,000 (%s)" % label, "<= 128",
                  max(r["rss_bytes_per_particle"] for r in big_runs) if big_runs else None,
                  lambda v: v <= 128.0, "%.1f B"))
    huge = load(a.pbf_10m) if a.pbf_10m else None
    ok10 = bool(huge and any(r.get("ok") for r in huge["runs"]))
    t.append(("defaults", "a 10,000,000-particle block runs (pbf defaults)", "runs",
              1.0 if ok10 else 0.0, lambda v: v == 1.0, "%.0f"))
    print()
    print("targets (judged on the first block, SPlisHSPlasH's physics; the second block is the "
          "same with pbf's defaults):")
    out = []
    for physics, name, goal, value, ok, fmt in t:
        met = value is not None and ok(value)
        shown = "-" if value is None else (("yes" if value else "no") if goal == "runs" else fmt % value)
        print("  %-82s %-8s %10s   %s" % (name, goal, shown, "met" if met else "NOT met"))
        out.append({"target": name, "physics": physics, "physics_note": PHYSICS[physics],
                    "judged": physics == "splishsplash", "goal": goal, "value": value, "met": met})
    return out


def methods_report(a) -> int:
    """--method NAME=PBF.json,PEER.json[,PBF_DEFAULTS.json]: one row per pressure solver, both
    programs; PBF.json with SPlisHSPlasH's physics (vorticity 0), PBF_DEFAULTS.json with pbf's
    defaults (vorticity confinement)."""
    rows = []
    machine = build = date = None
    for item in a.method:
        name, files = item.split("=", 1)
        parts = files.split(",")
        # PBF.json and PEER.json may each be a '+'-joined list: the --repeat pairs, alternated
        pbf_paths, peer_paths = parts[0].split("+"), parts[1].split("+")
        pairs = []
        for pp, qp in zip(pbf_paths, peer_paths):
            pj, qj = load(pp), load(qp)
            pr = [r for r in (pj or {}).get("runs", []) if r.get("ok")]
            if pr and qj:
                pairs.append((pj, pr[-1], qj))
        dflt = load(parts[2]) if len(parts) > 2 else None
        druns = [r for r in (dflt or {}).get("runs", []) if r.get("ok")]
        if not pairs or len(pbf_paths) != len(peer_paths):
            print(f"side_by_side: {name}: no result ({len(pairs)} of {len(pbf_paths)} pairs)",
                  file=sys.stderr)
            continue
        pbf, r, peer = pairs[0]
        machine, build, date = pbf.get("machine"), pbf.get("build"), pbf.get("date")
        dt = pbf.get("settings", {}).get("dt") or peer["dt"]

        def ratio(pm, qm, pr_=r, q_=peer):
            return qm / pm * (dt / q_["dt"]) * (pr_["particles"] / q_["particles"])

        rep_rows = [{"pbf_ms_per_step_mean": x["ms_per_step_mean"],
                     "peer_ms_per_step_mean": q["ms_per_step_mean"],
                     "ratio_pbf_over_peer": ratio(x["ms_per_step_mean"], q["ms_per_step_mean"])}
                    for _, x, q in pairs]
        pbf_ms = statistics.median(x["pbf_ms_per_step_mean"] for x in rep_rows)
        peer_ms = statistics.median(x["peer_ms_per_step_mean"] for x in rep_rows)
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
            "repeats": len(rep_rows),
            "per_repeat": rep_rows,
            "pbf_ms_per_step_mean": pbf_ms,
            "pbf_ms_per_step_median": statistics.median(x["ms_per_step_median"] for _, x, _ in pairs),
            "peer_ms_per_step_mean": peer_ms,
            "peer_ms_per_step_median": statistics.median(q["ms_per_step_median"] for _, _, q in pairs),
            "pbf_s_per_simulated_s": pbf_ms / 1000.0 / dt,
            "peer_s_per_simulated_s": peer_ms / 1000.0 / peer["dt"],
            "ratio_pbf_over_peer": statistics.median(x["ratio_pbf_over_peer"] for x in rep_rows),
            "physics": PHYSICS["splishsplash"],
            "pbf_defaults_ms_per_step_mean": druns[-1]["ms_per_step_mean"] if druns else None,
            "ratio_pbf_defaults_over_peer":
                ratio(druns[-1]["ms_per_step_mean"], peer_ms, druns[-1]) if druns else None,
            "pbf_defaults_physics": PHYSICS["defaults"] if druns else None,
            "pbf_defaults_density_error_avg_max":
                [druns[-1]["density_error_avg"], druns[-1]["density_error_max"]] if druns else None,
            "peer_physics": peer.get("peer_physics"),
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
    print("pbf: %s; 'dflt' columns: %s" % (PHYSICS["splishsplash"], PHYSICS["defaults"]))
    hdr = ("method", "dt s", "pbf ms/st", "spl ms/st", "pbf s/sim s", "spl s/sim s", "ratio",
           "dflt ms/st", "dflt ratio", "pbf it", "spl it", "pbf err avg/max %", "spl err avg/max %")
    print("%-7s %7s %9s %9s %11s %11s %6s %10s %10s %9s %9s %17s %17s" % hdr)
    for x in rows:
        pe = x["peer_density_error_avg_max"]
        dms, drat = x["pbf_defaults_ms_per_step_mean"], x["ratio_pbf_defaults_over_peer"]
        print("%-7s %7.4f %9.2f %9.2f %11.2f %11.2f %6.2f %10s %10s %9s %9s %17s %17s" % (
            x["method"], x["dt"], x["pbf_ms_per_step_mean"], x["peer_ms_per_step_mean"],
            x["pbf_s_per_simulated_s"], x["peer_s_per_simulated_s"], x["ratio_pbf_over_peer"],
            "%.2f" % dms if dms else "-", "%.2f" % drat if drat else "-",
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
    for x in rows:
        if x["repeats"] > 1:
            print("%s: %d alternated pairs, ratios %s: the median above, and the medians of the "
                  "times" % (x["method"], x["repeats"], ", ".join(
                      "%.2f" % y["ratio_pbf_over_peer"] for y in x["per_repeat"])))
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
    ap.add_argument("--pbf", action="append", default=[],
                    help="pbf bench --json with SPlisHSPlasH's physics (vorticity 0), one per "
                         "repeat")
    ap.add_argument("--pbf-default", action="append", default=[],
                    help="pbf bench --json with pbf's defaults, one per repeat")
    ap.add_argument("--method", action="append", default=[],
                    help="NAME=PBF.json,PEER.json[,PBF_DEFAULTS.json]: a pressure solver on both "
                         "programs")
    ap.add_argument("--tolerance", default="0.1", help="the density error tolerance (%%), a label")
    ap.add_argument("--peer", action="append", default=[],
                    help="CASE=FILE, one per case and repeat, in the repeats' order")
    ap.add_argument("--ladder", action="append", default=[],
                    help="NAME=TOL,PBF.json: pbf's method NAME again at tolerance TOL (%%)")
    ap.add_argument("--ladder-text", default="0.1/0.2/0.5/1/2",
                    help="the ladder's tolerances, for the printed label")
    ap.add_argument("--out", required=True)
    ap.add_argument("--peer-log", action="append", default=[],
                    help="CASE=VALUE: SPlisHSPlasH's own 'Average time: SimStep' (ms, all steps)")
    ap.add_argument("--targets", action="store_true", help="print the performance targets")
    ap.add_argument("--pbf-1m", action="append", default=[],
                    help="pbf bench --json of --particles 1000000 (1 and N threads), "
                         "SPlisHSPlasH's physics, one per repeat")
    ap.add_argument("--pbf-1m-default", action="append", default=[],
                    help="the same with pbf's defaults, one per repeat")
    ap.add_argument("--pbf-10m", help="pbf bench --json of --particles 10000000")
    a = ap.parse_args()
    if a.method:
        return methods_report(a)
    if not a.pbf:
        ap.error("--pbf or --method is required")

    a.pbf_docs = [load(p) for p in a.pbf]
    a.pbf_default_docs = [load(p) for p in a.pbf_default]
    peers = {}  # case -> [per repeat]
    for item in a.peer:
        case, path = item.split("=", 1)
        peers.setdefault(case, []).append(load(path))
    own = {}
    for item in a.peer_log:
        case, value = item.split("=", 1)
        try:
            own.setdefault(case, []).append(float(value))
        except ValueError:
            pass

    rows = []
    for physics, docs in (("splishsplash", a.pbf_docs), ("defaults", a.pbf_default_docs)):
        for case, peer_list in peers.items():
            reps = []
            for k, peer in enumerate(peer_list):
                runs = runs_of([docs[k]] if k < len(docs) else [], case)
                if not peer or not runs:
                    continue
                top = max(r["threads"] for r in runs)
                r = [x for x in runs if x["threads"] == top][-1]
                reps.append({
                    "repeat": k + 1,
                    "threads": r["threads"],
                    "pbf_ms_per_step_mean": r["ms_per_step_mean"],
                    "pbf_ms_per_step_min": r["ms_per_step_min"],
                    "peer_ms_per_step_mean": peer["ms_per_step_mean"],
                    "peer_ms_per_step_min": peer["ms_per_step_min"],
                    "ratio_pbf_over_peer": r["particle_steps_per_s"] / peer["particle_steps_per_s"],
                    "particles_pbf": r["particles"],
                    "particles_peer": peer.get("particles"),
                    "steps": r["steps"],
                    "warmup_steps": r["warmup_steps"],
                    "pbf_density_error_avg_max": [r["density_error_avg"], r["density_error_max"]],
                    "peer_density_error_avg_max": [peer.get("density_error_avg"),
                                                   peer.get("density_error_max")],
                })
            if not reps:
                print(f"side_by_side: no pbf result for case {case} ({physics})", file=sys.stderr)
                continue
            last = reps[-1]
            pbf_ms = median([x["pbf_ms_per_step_mean"] for x in reps])
            peer_ms = median([x["peer_ms_per_step_mean"] for x in reps])
            rows.append({
                "case": case,
                "physics": physics,
                "physics_note": PHYSICS[physics],
                "threads": last["threads"],
                "particles_pbf": last["particles_pbf"],
                "particles_peer": last["particles_peer"],
                "steps": last["steps"],
                "warmup_steps": last["warmup_steps"],
                "repeats": len(reps),
                "pbf_ms_per_step_mean": pbf_ms,
                "peer_ms_per_step_mean": peer_ms,
                "peer_own_simstep_avg_ms_all_steps": median(own.get(case, [])),
                "pbf_particle_steps_per_s": last["particles_pbf"] * 1000.0 / pbf_ms,
                "peer_particle_steps_per_s": last["particles_peer"] * 1000.0 / peer_ms,
                "ratio_pbf_over_peer": median([x["ratio_pbf_over_peer"] for x in reps]),
                "ratio_note": "the median of the per-repeat ratios of particle-steps per second "
                              "(the programs alternate); ms_per_step: medians of the repeats' "
                              "means",
                "ratio_per_repeat": [x["ratio_pbf_over_peer"] for x in reps],
                "pbf_density_error_avg_max": last["pbf_density_error_avg_max"],
                "peer_density_error_avg_max": last["peer_density_error_avg_max"],
                "per_repeat": reps,
            })

    print()
    print("side by side: same geometry, particles, dt, iterations, kernel radius, steps and "
          "threads; ratio = pbf particle-steps/s over SPlisHSPlasH's (splash; > 1: pbf faster), "
          "the median over %d repeat(s), the programs alternating" % max(len(a.pbf), 1))
    print("physics 'same': %s" % PHYSICS["splishsplash"])
    print("physics 'dflt': %s" % PHYSICS["defaults"])
    hdr = ("case", "physics", "thr", "particles", "steps", "pbf ms/step", "splash ms/step",
           "pbf Mpst/s", "splash Mpst/s", "ratio", "per repeat", "pbf dens.err", "splash dens.err")
    print("%-7s %-7s %3s %9s %5s %11s %14s %10s %13s %7s %-20s %15s %15s" % hdr)
    for x in rows:
        pe = x["peer_density_error_avg_max"]
        pe_s = "%.2f/%.2f%%" % tuple(pe) if pe[0] is not None else "-"
        print("%-7s %-7s %3d %9d %5d %11.3f %14.3f %10.3f %13.3f %7.2f %-20s %15s %15s" % (
            x["case"], "same" if x["physics"] == "splishsplash" else "dflt", x["threads"],
            x["particles_pbf"], x["steps"], x["pbf_ms_per_step_mean"],
            x["peer_ms_per_step_mean"], x["pbf_particle_steps_per_s"] / 1e6,
            x["peer_particle_steps_per_s"] / 1e6, x["ratio_pbf_over_peer"],
            " ".join("%.2f" % v for v in x["ratio_per_repeat"]),
            "%.2f/%.2f%%" % tuple(x["pbf_density_error_avg_max"]), pe_s))
        if x["particles_peer"] != x["particles_pbf"]:
            print(f"  note: particle counts differ ({x['particles_pbf']} vs {x['particles_peer']})")
    print("(ms/step: mean wall time of the measured steps, median over the repeats; "
          "SPlisHSPlasH's from its per-step callback; density error: mean/max of "
          "max(rho/rho0 - 1, 0) at the last step)")
    phys = next((p[0].get("peer_physics") for p in peers.values() if p and p[0]), None)
    if phys:
        print("SPlisHSPlasH ran (read back): " + ", ".join("%s %s" % kv for kv in phys.items()))

    targets = check_targets(a, rows) if a.targets else None

    first = a.pbf_docs[0] or {}
    out = {
        "tool": "bench/side_by_side.sh",
        "targets": targets,
        "targets_note": "each target twice: physics 'splishsplash' (pbf --set vorticity=0, as "
                        "SPlisHSPlasH's scene: the figure judged) and 'defaults' (pbf's default "
                        "vorticity confinement), both measured in this run",
        "date": first.get("date"),
        "machine": first.get("machine"),
        "pbf_build": first.get("build"),
        "load_average_at_end": list(os.getloadavg()),
        "physics": PHYSICS,
        "peer": peers,
        "pbf": a.pbf_docs,
        "pbf_defaults": a.pbf_default_docs,
        "pbf_1m": [load(p) for p in a.pbf_1m],
        "pbf_1m_defaults": [load(p) for p in a.pbf_1m_default],
        "comparison": rows,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwritten: {a.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
