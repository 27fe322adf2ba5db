#!/usr/bin/env python3
"""Scaling model of `mpirun -np P pbf run` (docs/mpi.md): halo volume, messages and compute per
process, and the parallel efficiency they predict, for slabs (what pbf does now) and for cubic
blocks (recursive bisection, the next step). Prints the tables of docs/mpi.md.

    python3 bench/mpi_model.py [--tp SECONDS] [--alpha SECONDS] [--beta BYTES_PER_S]
"""
import argparse
import math

p = argparse.ArgumentParser()
p.add_argument("--tp", type=float, default=2.8e-6, help="compute per particle and step, one core (s)")
p.add_argument("--alpha", type=float, default=2e-6, help="message latency (s)")
p.add_argument("--beta", type=float, default=10e9, help="bandwidth per process (B/s)")
p.add_argument("--iterations", type=int, default=4, help="solver iterations per step")
a = p.parse_args()

I = a.iterations
# bytes sent per ghost particle and step: 44 B after predict (the 11 SORTED words), then
# lambda (4 B) and x* (12 B) every iteration, then density and |omega| (8 B)
GHOST_BYTES = 44 + 16 * I + 8
LAYERS = 2  # particle layers in one cell layer (h = 4 r = 2 spacings)


def collectives(P):
    """Per step: the Alltoall of counts (Bruck: log2 P rounds of P/2 ints) and seven small
    Allreduce (agreements 3, statistics 2, guard 2), each 2 log2 P latencies."""
    lg = max(math.log2(P), 1.0)
    return lg * a.alpha + lg * (P / 2) * 4 / a.beta + 7 * 2 * lg * a.alpha


def model(N, P, shape):
    n = N / P
    if shape == "slab":
        edge = N ** (1 / 3)           # a cube of fluid, particles per edge
        cells = edge / LAYERS         # cell layers along the slab axis
        if P > cells:
            return None               # fewer cell layers than processes
        ghosts = 2 * LAYERS * edge * edge
        neighbours = 2
    else:
        e = n ** (1 / 3)
        ghosts = (e + 2 * LAYERS) ** 3 - n
        neighbours = 26
    messages = neighbours * (2 * I + 2)
    comm = messages * a.alpha + ghosts * GHOST_BYTES / a.beta + collectives(P)
    comp = n * a.tp
    return dict(n=n, ghosts=ghosts, msgs=messages, bpp=ghosts * GHOST_BYTES / n, comp=comp,
                comm=comm, eff=comp / (comp + comm))


KINDS = (("core", 1.0), ("16-core node", 16 / 0.9), ("GPU", a.tp / 0.02e-6))


def eff(m, speedup):
    comp = m["comp"] / speedup
    return 100 * comp / (comp + m["comm"])


print(f"t_p = {a.tp * 1e6:.2f} us/particle/step on one core, alpha = {a.alpha * 1e6:.1f} us, "
      f"beta = {a.beta / 1e9:.0f} GB/s, {I} iterations, {GHOST_BYTES} B per ghost and step; "
      "a 16-core process computes 16 x 0.9 times faster, a GPU process at 0.02 us/particle/step\n")
print("| particles | processes | decomposition | particles/process | ghosts/process | messages/step "
      "| halo B/particle/step | communication ms/step | efficiency: core | 16-core node | GPU |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for N, P in ((1e9, 64), (1e9, 1000), (1e9, 10000), (1e10, 64), (1e10, 1000), (1e10, 10000)):
    for shape in ("slab", "block"):
        m = model(N, P, shape)
        if m is None:
            print(f"| {N:.0e} | {P} | {shape} | {N / P:.3g} | | | | | fewer cell layers than processes | | |")
            continue
        e = " | ".join(f"{eff(m, s):.1f} %" for _, s in KINDS)
        print(f"| {N:.0e} | {P} | {shape} | {m['n']:.3g} | {m['ghosts']:.3g} | {m['msgs']} | "
              f"{m['bpp']:.2f} | {1e3 * m['comm']:.3g} | {e} |")
