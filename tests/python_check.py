"""Checks of the pbf Python package as installed by `pip install ./python` (tests/run_python.sh).

    python python_check.py SCENES_DIR VERSION

The package is the installed one (not the source folder); worlds come from a scene file, a
dictionary and JSON text, with overrides; the particle arrays are NumPy views onto the library's
own memory (shared between calls, at the addresses the C API gives, read-only, not owning);
the physics of a few frames makes sense; mistakes raise pbf.Error naming the key and value;
views outlive close() safely.
"""
import ctypes
import os
import sys

import numpy as np

import pbf

failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if not ok else ""))
    if not ok:
        failures += 1


scenes, version = sys.argv[1], sys.argv[2]

# ---- the installed package ----------------------------------------------------------------------
check("imported from site-packages", "site-packages" in pbf.__file__, pbf.__file__)
check(f"version {pbf.__version__} is the library's {version}", pbf.__version__ == version)
bundled = os.path.join(os.path.dirname(pbf.__file__), "libpbf.so")
check("the library is bundled in the package", os.path.isfile(bundled), bundled)
check("and loaded from there", os.path.samefile(pbf._lib._name, bundled), pbf._lib._name)

# ---- a scene file ---------------------------------------------------------------------------
world = pbf.World.from_scene(os.path.join(scenes, "quick.json"))
check("scene name", world.name == "quick", world.name)
check("run parameters fps 60, substeps 4", (world.fps, world.substeps) == (60.0, 4))
p = world.particles()
check("2250 particles", p.count == 2250 and len(p.x) == 2250, p.count)
arrays = {a: getattr(p, a) for a in ("x", "y", "z", "vx", "vy", "vz", "density", "id")}
check("dtypes float32 and uint32 (id)",
      all(v.dtype == (np.uint32 if k == "id" else np.float32) for k, v in arrays.items()))
check("ids are 0..count-1", np.array_equal(np.sort(p.id), np.arange(p.count, dtype=np.uint32)))
check("fields by name", p.fields["position"][1] is p.y and p.fields["density"] is p.density)

# no copies: views onto the library's memory
check("arrays do not own their data", not any(v.flags.owndata for v in arrays.values()))
check("arrays are read-only", not any(v.flags.writeable for v in arrays.values()))
try:
    p.x[0] = 1.0
    check("writing into a view raises", False)
except ValueError:
    check("writing into a view raises", True)
q = world.particles()
check("two views of the same moment share memory",
      all(np.shares_memory(getattr(p, a), getattr(q, a)) for a in arrays))
# the members of the C struct pbf_particles, in their order: x, y, z, vx, vy, vz, density, id
view = pbf._world_particles(world._handle.ptr)
for index, name in enumerate(("x", "y", "z", "vx", "vy", "vz", "density", "id")):
    c_address = view.arrays[index]
    numpy_address = arrays[name].__array_interface__["data"][0]
    check(f"{name} is at the address pbf_world_particles gives", numpy_address == c_address,
          f"{numpy_address:#x} vs {c_address:#x}")
check("the views hold the library's values: first particle at rest on the lattice",
      abs(float(p.x[p.id == 0][0]) - 0.01) < 1e-6 and float(np.abs(p.vy).max()) == 0.0)

# ---- physics of a few frames ----------------------------------------------------------------
y0 = float(p.y.mean())
for frame in range(12):
    world.step_frame()
s = world.stats()
p = world.particles()
check("time after 12 frames is 0.2 s", abs(s["time"] - 0.2) < 1e-5, s["time"])
check("48 steps", s["steps"] == 48, s["steps"])
check("particles conserved", p.count == 2250 and s["particles"] == 2250)
check("no non-finite or escaped particle", s["nonfinite"] == 0 and s["escaped"] == 0, s)
check("the speed limit cut no velocity", s["speed_clamps"] == 0, s)
check("the column falls: mean height drops", float(p.y.mean()) < y0 - 0.01,
      f"{y0:.4f} -> {float(p.y.mean()):.4f}")
check("it moves: some particle faster than 0.5 m/s",
      float(np.sqrt(p.vx**2 + p.vy**2 + p.vz**2).max()) > 0.5)
inside = (p.x >= 0).all() and (p.x <= 0.5).all() and (p.y >= 0).all() and (p.y <= 0.4).all()
check("every particle inside the 0.5 x 0.4 x 0.3 m box", bool(inside))
rho = np.median(p.density)
check("median density near the rest density 1000 kg/m^3", 900 < rho < 1100, rho)
check("the step reorders: ids no longer in creation order", not np.array_equal(
    p.id, np.arange(p.count, dtype=np.uint32)))

# ---- a dictionary, JSON text, overrides -----------------------------------------------------
column = {"domain_min": [0, 0, 0], "domain_max": [0.5, 0.5, 0.5], "particle_radius": 0.025,
          "fps": 50, "substeps": 2, "fluid": [{"min": [0, 0, 0], "max": [0.2, 0.3, 0.2]}]}
w2 = pbf.World.from_dict(column)
check("from_dict: 4 x 6 x 4 particles", w2.particles().count == 96, w2.particles().count)
check("from_dict: the default name", w2.name == "<dict>", w2.name)
check("from_dict: dt = 1 / (fps * substeps)", abs(w2.dt - 0.01) < 1e-12, w2.dt)
w3 = pbf.World.from_dict(column, particle_radius=0.05, gravity=(0, -1, 0), substeps=5)
check("overrides: a radius twice as big gives an eighth of the particles",
      w3.particles().count == 12, w3.particles().count)
check("overrides: substeps", w3.substeps == 5)
drop = dict(column, fluid=[{"min": [0.1, 0.2, 0.1], "max": [0.3, 0.3, 0.3]}])
w3 = pbf.World.from_dict(drop, particle_radius=0.05, gravity=(0, -1.0, 0), substeps=5)
w3.step()
vy = w3.particles().vy
check("overrides: gravity -1 m/s^2, dt 0.004 s: a drop in free fall has vy = -0.004 m/s",
      w3.particles().count == 4 and np.allclose(vy, -0.004, atol=1e-6), vy)
w4 = pbf.World.from_json('{"particle_radius": 0.05, "fluid": [{"min": [0,0,0], "max": [0.3,0.3,0.3]}]}')
check("from_json", w4.particles().count == 27 and w4.name == "<json>", w4.particles().count)

# ---- mistakes ---------------------------------------------------------------------------------
def error_of(fn):
    try:
        fn()
    except pbf.Error as e:
        return e
    return None


e = error_of(lambda: pbf.World.from_dict({"particle_radius": -1}, source="mine.json"))
check("a bad value raises pbf.Error naming the source, key and value",
      e is not None and "mine.json" in str(e) and "particle_radius" in str(e) and "-1" in str(e)
      and e.status == "invalid argument", e)
e = error_of(lambda: pbf.World.from_dict({"particle_radus": 0.01}))
check("a mistyped key gets a suggestion", e is not None and 'did you mean "particle_radius"' in str(e), e)
e = error_of(lambda: pbf.World.from_scene(os.path.join(scenes, "quick.json"), solver_iterations=0))
check("a bad override names it", e is not None and "override solver_iterations" in str(e), e)
e = error_of(lambda: pbf.World.from_scene(os.path.join(scenes, "no_such.json")))
check("a missing file", e is not None and "no_such.json" in str(e) and e.status == "i/o", e)
e = error_of(lambda: world.step(-1.0))
check("a negative dt", e is not None and "dt" in str(e), e)

# ---- lifetime -----------------------------------------------------------------------------------
p = world.particles()
before = p.x.copy()
world.close()
check("views stay readable after close()", np.array_equal(p.x, before))
try:
    world.step()
    check("a closed world refuses to step", False)
except ValueError:
    check("a closed world refuses to step", True)
with pbf.World.from_dict(column) as w5:
    n5 = w5.particles().count
check("context manager", n5 == 96 and "closed" in repr(w5), repr(w5))

devices = pbf.devices()
check("devices(): the CPU first", devices and devices[0]["id"] == "cpu", devices)
print(f"{'all passed' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
