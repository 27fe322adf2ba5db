#!/usr/bin/env python3
"""The state held by two pbf checkpoints is the same, bit for bit (app/io/checkpoint.h).

Either file may be a single-file checkpoint (format version 1, or 3 with PBF's multipliers lambda)
or the index of a checkpoint in pieces (version 2, written by `mpirun -np N pbf run`:
checkpoint_NNNNN_RRRRR.pbfpc beside it, piece version 2 with lambda). A
checkpoint in pieces is read independently of pbf: every piece's particles are merged by key, which
gives the memory order of the state. Compared: particle count, frame, time, steps, and every column
(x, y, z, vx, vy, vz, density, id, lambda) element by element as bits, in memory order (the order is part
of the state: it decides the order of every neighbour sum). Checksums are verified.

    python3 checkpoint_state_check.py A.pbfck B.pbfck
"""
import array
import os
import struct
import sys

COLUMNS = ["x", "y", "z", "vx", "vy", "vz", "density", "id", "lambda"]
FNV_OFFSET, FNV_PRIME = 14695981039346656037, 1099511628211


def fnv1a64(data):
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def words(buf, at, n):
    a = array.array("I")
    a.frombytes(buf[at:at + 4 * n])
    return a


def checked(path, buf):
    (stored,) = struct.unpack_from("<Q", buf, len(buf) - 8)
    if len(buf) < 72 or stored != fnv1a64(buf[:-8]):
        sys.exit(f"{path}: checksum mismatch")
    return stored


def read(path):
    """(frame, time, steps, version, pieces, columns: list of 8 uint32 arrays in memory order)"""
    buf = open(path, "rb").read()
    if buf[:8] != b"PBFCKPT\0":
        sys.exit(f"{path}: not a pbf checkpoint")
    version, _, _, count, frame, time, steps, _ = struct.unpack_from("<IIIiqdqQ", buf, 8)
    checked(path, buf)
    if version in (1, 3):  # 3: PBF's multipliers lambda[n] after the columns
        ncols = 9 if version == 3 else 8
        return frame, time, steps, version, 1, [words(buf, 64 + 4 * k * count, count) for k in range(ncols)]
    if version != 2:
        sys.exit(f"{path}: format version {version}")
    pieces, key_kind = struct.unpack_from("<ii", buf, 56)
    table = [struct.unpack_from("<iIQ", buf, 64 + 16 * j) for j in range(pieces)]
    base = path[: -len(".pbfck")]
    runs = []  # (key, piece, index in piece, the piece's columns)
    parts = []
    for j, (m, _, sum_j) in enumerate(table):
        ppath = f"{base}_{j:05d}.pbfpc"
        p = open(ppath, "rb").read()
        pversion = struct.unpack_from("<I", p, 8)[0] if len(p) >= 12 else 0
        with_lambda = pversion == 2 and m > 0  # piece version 2: lambda[m] after the keys
        if p[:8] != b"PBFCKPC\0" or len(p) != 64 + (40 if with_lambda else 36) * m + 8:
            sys.exit(f"{ppath}: not the piece of {m} particles its index names")
        if checked(ppath, p) != sum_j:
            sys.exit(f"{ppath}: not the piece its index names (checksum)")
        pm, pframe, pj, pn, psteps, _, pkind = struct.unpack_from("<iqiiqQi", p, 20)
        if (pm, pframe, pj, pn, psteps, pkind) != (m, frame, j, pieces, steps, key_kind):
            sys.exit(f"{ppath}: header does not match the index")
        cols = [words(p, 64 + 4 * k * m, m) for k in range(8)]
        keys = words(p, 64 + 32 * m, m)
        if with_lambda:
            cols.append(words(p, 64 + 36 * m, m))
        parts.append(cols)
        runs.extend((keys[i], j, i) for i in range(m))
    # merge by key; equal keys only within one piece, in its order
    runs.sort(key=lambda r: (r[0], r[1], r[2]))
    if len({(k, j) for k, j, _ in runs}) != len({k for k, _, _ in runs}):
        sys.exit(f"{path}: a key appears in two pieces")
    ncols = max((len(c) for c in parts), default=8)
    if any(len(c) != ncols for c, (m, _, _) in zip(parts, table) if m > 0):
        sys.exit(f"{path}: pieces with and without lambda")
    cols = [array.array("I", (parts[j][k][i] for _, j, i in runs)) for k in range(ncols)]
    if len(runs) != count:
        sys.exit(f"{path}: the pieces hold {len(runs)} particles, the index {count}")
    return frame, time, steps, version, pieces, cols


def main():
    a, b = sys.argv[1], sys.argv[2]
    fa, ta, sa, va, pa, ca = read(a)
    fb, tb, sb, vb, pb, cb = read(b)
    print(f"  {os.path.basename(a)} (version {va}, {pa} piece(s)) against "
          f"{os.path.basename(b)} (version {vb}, {pb} piece(s)): {len(ca[0])} / {len(cb[0])} particles")
    ok = (fa, ta, sa) == (fb, tb, sb) and len(ca[0]) == len(cb[0]) and len(ca) == len(cb)
    if not ok:
        print(f"  frame/time/steps/count differ: {(fa, ta, sa, len(ca[0]))} {(fb, tb, sb, len(cb[0]))}")
    for name, x, y in zip(COLUMNS, ca, cb):
        if ok and x != y:
            first = next(i for i in range(len(x)) if x[i] != y[i])
            print(f"  {name} differs first at particle {first} of the memory order")
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
