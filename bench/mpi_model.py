#!/usr/bin/env python3
"""Scaling model of `mpirun -np P pbf run` (docs/mpi.md): per process and step, the particles it
computes (its own and its ghosts), the decomposition's own work, the halo and migration traffic,
messages and collectives, and the parallel efficiency they predict; for recursive coordinate
bisection (boxes, the default) and for slabs. Prints the tables of docs/mpi.md.

    python3 bench/mpi_model.py [--tp S] [--tdd S] [--alpha S] [--beta B/S] [--check JSON]

--check bench/results/mpi_scaling_*.json compares the model with the measured points (1 and 2
processes on one machine, with that machine's t_p and t_dd and its shared-memory alpha, beta).
"""
import argparse
import json
import math

p = argparse.ArgumentParser()
p.add_argument("--tp", type=float, default=2.8e-6,
               help="compute per particle and step, one core, s (README: 164 ms per step for "
                    "59,319 particles on one thread)")
p.add_argument("--tdd", type=float, default=0.009,
               help="the decomposition's own work per owned particle and step (migration's "
                    "pack, exchange and merge, the halo lists, the ghosts' removal), as a "
                    "fraction of t_p (measured: mpirun -np 1 executes 0.9 %% more instructions "
                    "per step than a run without MPI)")
p.add_argument("--ghost-cost", type=float, default=0.3,
               help="work per ghost particle and step as a fraction of t_p (a ghost has an "
                    "empty neighbour list: its sort, per-particle stage work, packing and "
                    "unpacking; measured: 0.29 at 4 processes, see docs/mpi.md)")
p.add_argument("--alpha", type=float, default=2e-6, help="message latency, s")
p.add_argument("--beta", type=float, default=10e9, help="bandwidth per process, B/s")
p.add_argument("--iterations", type=int, default=4, help="solver iterations per step")
p.add_argument("--move", type=float, default=0.25,
               help="mean displacement per step in particle spacings (migration)")
p.add_argument("--traffic", type=float, default=1787.0,
               help="memory traffic of a step per particle, B (pbf bench's stage model, a lower "
                    "bound: 1787 B on the medium dam break)")
p.add_argument("--imbalance", type=float, default=0.1, help="rank_imbalance")
p.add_argument("--check", default=None, help="a bench/mpi_scaling.py JSON to compare with")
a = p.parse_args()

I = a.iterations
# bytes sent per ghost particle and step: 44 B after predict (the 11 SORTED words), then
# lambda (4 B) and x* (12 B) every iteration, then density and |omega| (8 B)
GHOST_BYTES = 44 + 16 * I + 8
MIGRATE_BYTES = 44
DEPTH = 2  # particle layers in one cell layer (h = 4 r = 2 spacings): the ghost shell's depth


def rcb_boxes(dims, P):
    """Box sizes (particles per edge) that recursive coordinate bisection gives a uniform block of
    `dims` particles per edge on P processes: split the longest edge in proportion to the
    processes on each side (the count median of a uniform block), recurse. Returns the list of
    the leaves' dims (one per process; each distinct shape once with its multiplicity)."""
    out = {}

    def rec(d, p, mult):
        if p == 1:
            key = tuple(d)
            out[key] = out.get(key, 0) + mult
            return
        ax = max(range(3), key=lambda k: d[k])
        pl = p // 2
        left, right = list(d), list(d)
        left[ax] = d[ax] * pl / p
        right[ax] = d[ax] - left[ax]
        if pl == p - pl:
            rec(left, pl, 2 * mult)
        else:
            rec(left, pl, mult)
            rec(right, p - pl, mult)

    rec(list(dims), P, 1)
    return out


def ghosts_of(d, interior_faces=6):
    """Ghost particles of a box of d particles per edge: the shell DEPTH deep on every side
    (a box inside the fluid; one on the fluid's surface has fewer)."""
    return (d[0] + 2 * DEPTH) * (d[1] + 2 * DEPTH) * (d[2] + 2 * DEPTH) - d[0] * d[1] * d[2]


def collectives(P):
    """Per step: the Alltoall of migration counts (Bruck: log2 P rounds of P/2 ints) and eight
    small Allreduce (agreements 3, statistics 2, guard 2, the solve's error of the last
    iteration 1), each 2 log2 P latencies."""
    lg = max(math.log2(P), 1.0)
    return lg * a.alpha + lg * (P / 2) * 4 / a.beta + 8 * 2 * lg * a.alpha


def model(N, P, shape, speedup=1.0, dd_speedup=1.0):
    """Per process and step on the busiest process of a cube of N particles. speedup: how much
    faster than one core a process computes; dd_speedup: its decomposition work (1: one thread,
    as domain.c had it before its passes were threaded)."""
    e = N ** (1 / 3)
    n = N / P
    if shape == "slabs":
        if P > e / DEPTH:
            return None  # fewer cell layers than processes
        g = 2 * DEPTH * e * e  # both sides of an inner slab
        nbr = 2
        surf = 2 * e * e
    else:
        boxes = rcb_boxes((e, e, e), P)
        # the busiest process: most own + ghost particles
        d = max(boxes, key=lambda b: b[0] * b[1] * b[2] + ghosts_of(b))
        n = d[0] * d[1] * d[2]
        g = ghosts_of(d)
        nbr = 26 if P >= 27 else min(P - 1, 26)
        surf = 2 * (d[0] * d[1] + d[1] * d[2] + d[0] * d[2])
    if P == 1:
        g, nbr = 0, 0
    moved = min(surf * a.move, n) if P > 1 else 0  # particles crossing the box's faces per step
    messages = nbr * (1 + 2 * I + 1)  # migration + (lambda, x*) per iteration + (rho, |omega|)
    sent = g * GHOST_BYTES + moved * MIGRATE_BYTES
    comm = messages * a.alpha + sent / a.beta + (collectives(P) if P > 1 else 0.0)
    t_serial = n * a.tp / speedup
    comp = (n + a.ghost_cost * g) * a.tp / speedup + n * a.tdd * a.tp / dd_speedup
    step = comp + comm
    return dict(n=n, g=g, nbr=nbr, msgs=messages, bpp=sent / n, share=sent / n / a.traffic,
                comm=comm, comp=comp, eff=t_serial / step,
                eff_imb=t_serial / (comp * (1 + a.imbalance) + comm))


NODE = 16 * 0.9
KINDS = (("core", 1.0, 1.0), ("16-core node", NODE, 1.0), ("16-core node, decomposition threaded", NODE, NODE))


def row(N, P, shape):
    m = model(N, P, shape)
    if m is None:
        return (f"| {N:.0e} | {P:,} | {shape} | {N / P:.3g} | | | | | | fewer cell layers than "
                "processes | | | |")
    effs = [model(N, P, shape, s, ds)["eff"] for _, s, ds in KINDS]
    return (f"| {N:.0e} | {P:,} | {shape} | {m['n']:.3g} | {m['g'] / m['n'] * 100:.1f} % | "
            f"{m['nbr']} | {m['msgs']} | {m['bpp']:.2f} ({100 * m['share']:.2f} %) | "
            f"{1e3 * m['comm']:.3g} | {100 * m['eff']:.1f} % | {100 * m['eff_imb']:.1f} % | "
            + " | ".join(f"{100 * x:.1f} %" for x in effs[1:]) + " |")


HEAD = ("| particles | processes | decomposition | particles/process | ghosts/particles | "
        "neighbours | messages/step | halo + migration B/particle/step (of the step's memory "
        "traffic) | communication ms/step | efficiency: core | core at rank_imbalance | "
        "16-core node | 16-core node, decomposition threaded |")
SEP = "| --- " * 13 + "|"

print(f"t_p = {a.tp * 1e6:.2f} us per particle and step on one core, t_dd = {a.tdd:.3f} t_p, "
      f"a ghost {a.ghost_cost:.2f} t_p; "
      f"alpha = {a.alpha * 1e6:.1f} us, beta = {a.beta / 1e9:.0f} GB/s; {I} iterations, "
      f"{GHOST_BYTES} B per ghost and step, {MIGRATE_BYTES} B per migrating particle "
      f"({a.move} spacings per step); memory traffic {a.traffic:.0f} B per particle and step; "
      f"a 16-core process computes 16 x 0.9 times faster\n")
print("Weak scaling, 10^6 particles per process:\n")
print(HEAD)
print(SEP)
for P in (64, 1000, 10000):
    for shape in ("bisection", "slabs"):
        print(row(1e6 * P, P, shape))
print("\nFixed problems:\n")
print(HEAD)
print(SEP)
for N in (1e9, 1e10):
    for P in (64, 1000, 10000):
        for shape in ("bisection", "slabs"):
            print(row(N, P, shape))

if a.check:
    r = json.load(open(a.check))
    runs = {(x["config"], x["length_m"]): x for x in r["runs"]}
    s06, s12 = runs[("serial", 0.6)], runs[("serial", 1.2)]
    b = runs[("np2 bisection", 1.2)]
    print(f"\nCheck against {a.check} ({r['machine']['cpu']}, {r['machine']['cores_online']} "
          f"cores, load average {r['machine']['load_average_1min_during']} during the runs):")
    ins = r.get("instructions")
    if ins:
        # t_dd from 1 process, the ghost cost from 4 (the most ghosts), checked on 2
        cg = ins["runs"]
        w_s12 = cg["serial 1.2"][0]["work_instructions"]
        tdd = ins["np1_overhead"]
        N = s12["particles"]
        per = w_s12 / N  # instructions per particle over the counted steps
        g4 = ins["np4_run"]["ghosts_per_process"] * 4
        w4 = sum(x["work_instructions"] for x in cg["np4 1.2"])
        cgh = (w4 - w_s12 * (1 + tdd)) / (g4 * per)
        g2 = b["ghosts_per_process"] * 2
        w2 = sum(x["work_instructions"] for x in cg["np2 1.2"])
        pred2 = w_s12 * (1 + tdd) + cgh * g2 * per
        print(f"  instructions (callgrind): t_dd = {100 * tdd:.1f} % of t_p (1 process against no "
              f"MPI); a ghost costs {cgh:.2f} t_p (4 processes, "
              f"{ins['np4_run']['ghosts_per_process']} ghosts each); so 2 processes "
              f"({b['ghosts_per_process']} ghosts each) should execute {pred2 / 1e9:.3f} G "
              f"instructions in all: measured {w2 / 1e9:.3f} G ({100 * (w2 / pred2 - 1):+.1f} %)")
        print(f"  work efficiency at 2 processes (the busier one): {100 * ins['np2_work_efficiency']:.1f} %")
    n = b["particles"] / 2
    g = b["ghosts_per_process"]
    msgs = b["messages_per_process"]
    tp = s06["ms_per_step"] * 1e-3 / s06["particles"]
    sent = (b["migration_bytes_per_particle"] + b["halo_bytes_per_particle"]) * n
    # shared memory on one machine: alpha 1 us, beta 5 GB/s (Open MPI's shared-memory transport)
    comm = msgs * 1e-6 + sent / 5e9 + 8 * 2 * 1e-6
    pred = n * tp / ((n * (1 + a.tdd) + a.ghost_cost * g) * tp + comm)
    print(f"  wall clock: t_p = {tp * 1e6:.2f} us per particle and step (serial, 0.6 m); "
          f"2 processes: {g} ghosts each ({100 * g / n:.1f} %), {msgs:.1f} messages, "
          f"{sent / n:.1f} B per particle and step")
    print(f"  weak scaling at 2 processes: model {100 * pred:.1f} %, measured "
          f"{100 * r['efficiency']['weak_np2_bisection']:.1f} % (minimum of "
          f"{r['settings']['repeats']} runs)")
    tp12 = s12["ms_per_step"] * 1e-3 / s12["particles"]
    pred12 = n * tp12 / ((n * (1 + a.tdd) + a.ghost_cost * g) * tp12 + comm)
    print(f"  strong scaling at 2 processes: model {100 * pred12:.1f} %, "
          f"measured {100 * r['efficiency']['strong_np2_bisection']:.1f} %")
