"""The figures `pbf run` prints, read back by the benchmark scripts (bench/mpi_scaling.py,
bench/mpi_weak.py, bench/mpi_np1.py): the mean time per step, the particle count and, under mpirun, the MPI
summary line (`pbf: MPI: ...`: the balance, the ghosts, the messages, the bytes sent and the
decomposition's own time per step)."""
import re


def parse_run(text):
    m = re.search(r"mean ([0-9.]+) ms/step over ([0-9]+) steps", text)
    res = {"ms_per_step": float(m.group(1)), "steps": int(m.group(2))}
    m = re.search(r"done: [0-9]+ frames, ([0-9]+) particles", text)
    res["particles"] = int(m.group(1))
    m = re.search(r"particles per process ([0-9]+)\.\.([0-9]+), ([0-9]+) rebalances, up to "
                  r"([0-9]+) neighbours; per process and step ([0-9]+) ghosts, ([0-9.]+) "
                  r"messages; sent per particle and step: ([0-9.]+) B migration and ghosts, "
                  r"([0-9.]+) B halo updates", text)
    if m:
        res.update(rank_particles_min=int(m.group(1)), rank_particles_max=int(m.group(2)),
                   rebalances=int(m.group(3)), neighbours=int(m.group(4)),
                   ghosts_per_process=int(m.group(5)), messages_per_process=float(m.group(6)),
                   migration_bytes_per_particle=float(m.group(7)),
                   halo_bytes_per_particle=float(m.group(8)))
    m = re.search(r"decomposition ([0-9.]+) ms per step", text)
    res["decomposition_ms_per_step"] = float(m.group(1)) if m else None
    return res
