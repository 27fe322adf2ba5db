"""pbf: Position Based Fluids (Macklin & Müller, SIGGRAPH 2013) from Python.

A thin layer over the C library libpbf (include/pbf/pbf.h, include/pbf/scene.h) through ctypes::

    import pbf
    world = pbf.World.from_scene("scenes/quick.json", particle_radius=0.02)
    world.step_frame()                 # one frame: `substeps` steps of 1 / (fps * substeps) s
    p = world.particles()              # NumPy views onto the library's arrays (no copies)
    print(p.count, p.y.mean(), p.density.max())

Scenes are the JSON scene files of the `pbf` command (from a file, a dictionary or a JSON
string), checked by the same loader: a mistake raises pbf.Error with a message that names the
source, the key and the value. Keyword arguments override scene keys (as `pbf run --set`).

The particle arrays are read-only views onto the world's memory, in its current memory order
(particles are sorted by grid cell at every step: `id` is each particle's stable identity). A
view is valid until the next step of its world: the step reuses the buffers, so call
`particles()` again after stepping, and copy what you keep (`p.x.copy()`). Views keep the
world's memory alive, even after `close()`.
"""

import ctypes
import json
import os

import numpy as np

try:
    from ._version import __version__
except ImportError:  # running from the source tree
    __version__ = "0+unknown"

__all__ = ["World", "Particles", "Error", "devices", "particle_fields", "__version__"]


# ---- the C library -----------------------------------------------------------------------------

def _load_library():
    path = os.environ.get("PBF_LIBRARY") or os.path.join(os.path.dirname(__file__), "libpbf.so")
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"pbf: cannot load the C library {path}: {e}. Install the package with "
            "`pip install ./python` from the repository, or set PBF_LIBRARY to a built "
            "libpbf.so") from e


_lib = _load_library()


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 512)]


# Structures the C functions return by value. Each has room to spare at its end, so that a
# library whose structure has grown since cannot write past the buffer ctypes provides.
class _SceneInfo(ctypes.Structure):
    _fields_ = [("source", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("description", ctypes.c_char_p), ("frames", ctypes.c_int),
                ("fps", ctypes.c_float), ("substeps", ctypes.c_int),
                ("particles", ctypes.c_int64), ("blocks", ctypes.c_int), ("boxes", ctypes.c_int),
                ("_spare", ctypes.c_char * 256)]


class _Stats(ctypes.Structure):
    _fields_ = [("time", ctypes.c_double), ("steps", ctypes.c_int64),
                ("particles", ctypes.c_int), ("density_error_avg", ctypes.c_double),
                ("density_error_max", ctypes.c_double), ("max_speed", ctypes.c_double),
                ("nonfinite", ctypes.c_int), ("escaped", ctypes.c_int),
                ("bad_stage", ctypes.c_char_p), ("substeps", ctypes.c_int),
                ("iterations", ctypes.c_int), ("solver_error", ctypes.c_double),
                ("divergence_iterations", ctypes.c_int), ("divergence_error", ctypes.c_double),
                ("speed_clamps", ctypes.c_int64), ("_spare", ctypes.c_char * 256)]


class _ParticleView(ctypes.Structure):
    # pbf_particles: the count, then the arrays, read through pbf_particles_component
    _fields_ = [("count", ctypes.c_int), ("arrays", ctypes.c_void_p * 8),
                ("_spare", ctypes.c_char * 256)]


class _FieldInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("components", ctypes.c_int),
                ("unit", ctypes.c_char_p), ("description", ctypes.c_char_p)]


class _DeviceInfo(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char * 32), ("name", ctypes.c_char * 128),
                ("driver", ctypes.c_char * 96), ("memory", ctypes.c_size_t),
                ("compute_units", ctypes.c_int)]


def _proto(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_P = ctypes.c_void_p
_ERR = ctypes.POINTER(_Error)
_STRS = ctypes.POINTER(ctypes.c_char_p)
_scene_load = _proto("pbf_scene_load", ctypes.c_int, ctypes.c_char_p, _STRS, ctypes.c_size_t,
                     ctypes.POINTER(_P), _ERR)
_scene_parse = _proto("pbf_scene_parse", ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                      ctypes.c_char_p, _STRS, ctypes.c_size_t, ctypes.POINTER(_P), _ERR)
_scene_destroy = _proto("pbf_scene_destroy", None, _P)
_scene_get_info = _proto("pbf_scene_get_info", _SceneInfo, _P)
_scene_create_world = _proto("pbf_scene_create_world", ctypes.c_int, _P, ctypes.POINTER(_P), _ERR)
_world_destroy = _proto("pbf_world_destroy", None, _P)
_world_step = _proto("pbf_world_step", ctypes.c_int, _P, ctypes.c_float, _ERR)
_world_particles = _proto("pbf_world_particles", _ParticleView, _P)
_world_stats = _proto("pbf_world_stats", _Stats, _P)
_particle_fields = _proto("pbf_particle_fields", ctypes.POINTER(_FieldInfo),
                          ctypes.POINTER(ctypes.c_size_t))
_particles_component = _proto("pbf_particles_component", ctypes.c_void_p,
                              ctypes.POINTER(_ParticleView), ctypes.c_size_t, ctypes.c_int)
_list_devices = _proto("pbf_list_devices", ctypes.c_int, ctypes.POINTER(_DeviceInfo), ctypes.c_int,
                       ctypes.c_char_p, ctypes.c_size_t)


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else None


# ---- errors ------------------------------------------------------------------------------------

class Error(Exception):
    """A failed library call; `status` is the pbf_status name, e.g. "invalid argument"."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


_STATUS = {1: "invalid argument", 2: "out of memory", 3: "limit", 4: "i/o"}


def _check(status, err):
    if status != 0:
        raise Error(_text(err.message), _STATUS.get(status, str(status)))


# ---- particle fields ---------------------------------------------------------------------------

# Attribute names of the components of the library's particle fields.
_COMPONENT_NAMES = {"position": ("x", "y", "z"), "velocity": ("vx", "vy", "vz")}
_DTYPES = {0: np.float32, 1: np.uint32}


def particle_fields():
    """The library's particle fields: a list of dicts with name, dtype, components, unit,
    description, and the Particles attributes of the components ("x", "y", "z" for position)."""
    n = ctypes.c_size_t(0)
    table = _particle_fields(ctypes.byref(n))
    fields = []
    for i in range(n.value):
        f = table[i]
        name = _text(f.name)
        comps = f.components
        attrs = _COMPONENT_NAMES.get(name)
        if attrs is None or len(attrs) != comps:
            attrs = (name,) if comps == 1 else tuple(f"{name}_{c}" for c in "xyzw"[:comps])
        fields.append({"name": name, "dtype": np.dtype(_DTYPES[f.type]), "components": comps,
                       "unit": _text(f.unit), "description": _text(f.description),
                       "attributes": attrs})
    return fields


_FIELDS = particle_fields()


class _Handle:
    """Owns a pbf_world; freed when neither its World nor any view refers to it."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            _world_destroy(self.ptr)
            self.ptr = None


class _ArrayRef:
    """The NumPy array interface of one library array; keeps the world's memory alive."""

    def __init__(self, address, count, dtype, owner):
        self.__array_interface__ = {"version": 3, "shape": (count,), "typestr": dtype.str,
                                    "data": (address, True)}  # True: read-only
        self._owner = owner


class Particles:
    """Read-only NumPy views of a world's particles at one moment (see the module help).

    Attributes: count, x, y, z (m), vx, vy, vz (m/s), density (kg/m^3), id (uint32), and
    `fields`: each field name ("position", "velocity", "density", "id") to its arrays.
    """

    def __init__(self, handle):
        view = _world_particles(handle.ptr)
        self.count = int(view.count)
        self.fields = {}
        for index, f in enumerate(_FIELDS):
            arrays = []
            for c, attr in enumerate(f["attributes"]):
                address = _particles_component(ctypes.byref(view), index, c)
                if self.count == 0 or not address:
                    a = np.empty(0, dtype=f["dtype"])
                    a.flags.writeable = False
                else:
                    a = np.asarray(_ArrayRef(address, self.count, f["dtype"], handle))
                setattr(self, attr, a)
                arrays.append(a)
            self.fields[f["name"]] = arrays[0] if len(arrays) == 1 else tuple(arrays)

    def __len__(self):
        return self.count

    def __repr__(self):
        return f"<pbf.Particles: {self.count} particles>"


# ---- worlds ------------------------------------------------------------------------------------

def _override_strings(overrides):
    out = []
    for key, value in overrides.items():
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, str):
            text = value
        elif isinstance(value, (list, tuple, np.ndarray)):
            text = ",".join(repr(float(v)) for v in value)
        elif isinstance(value, (int, np.integer)):
            text = str(int(value))
        else:
            text = repr(float(value))
        out.append(f"{key}={text}".encode())
    return (ctypes.c_char_p * max(len(out), 1))(*out), len(out)


class World:
    """A simulated world, built from a scene (World.from_scene, from_dict, from_json).

    The scene's run parameters are attributes: fps, substeps, frames, dt = 1 / (fps * substeps).
    """

    def __init__(self, _scene_ptr):
        try:
            info = _scene_get_info(_scene_ptr)
            self.name = _text(info.name)
            self.description = _text(info.description)
            self.source = _text(info.source)
            self.frames = int(info.frames)
            self.fps = float(info.fps)
            self.substeps = int(info.substeps)
            self.dt = 1.0 / (self.fps * self.substeps)
            err = _Error()
            ptr = _P()
            _check(_scene_create_world(_scene_ptr, ctypes.byref(ptr), ctypes.byref(err)), err)
            self._handle = _Handle(ptr.value)
        finally:
            _scene_destroy(_scene_ptr)

    @classmethod
    def from_scene(cls, path, **overrides):
        """A world from a scene file; keyword arguments override its keys
        (e.g. particle_radius=0.02, gravity=(0, -9.81, 0), device="cuda")."""
        strings, n = _override_strings(overrides)
        err = _Error()
        scene = _P()
        _check(_scene_load(os.fsencode(path), strings, n, ctypes.byref(scene), ctypes.byref(err)),
               err)
        return cls(scene)

    @classmethod
    def from_json(cls, text, source="<json>", **overrides):
        """A world from the JSON text of a scene; `source` names it in error messages."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        strings, n = _override_strings(overrides)
        err = _Error()
        scene = _P()
        _check(_scene_parse(data, len(data), source.encode(), strings, n, ctypes.byref(scene),
                            ctypes.byref(err)), err)
        return cls(scene)

    @classmethod
    def from_dict(cls, scene, source="<dict>", **overrides):
        """A world from a scene as a dictionary (the structure of a scene file)."""
        return cls.from_json(json.dumps(scene, allow_nan=False), source, **overrides)

    def _ptr(self):
        if self._handle is None:
            raise ValueError("the world is closed")
        return self._handle.ptr

    def step(self, dt=None):
        """One step of dt seconds (default: the scene's dt)."""
        err = _Error()
        _check(_world_step(self._ptr(), self.dt if dt is None else float(dt), ctypes.byref(err)),
               err)

    def step_frame(self):
        """One frame: `substeps` steps of the scene's dt, as `pbf run` writes frames."""
        for _ in range(self.substeps):
            self.step()

    def particles(self):
        """Read-only NumPy views of the particles now (valid until the next step)."""
        self._ptr()
        return Particles(self._handle)

    def stats(self):
        """Statistics of the current state: time (s), steps, particles, density_error_avg and
        density_error_max (% above rest density), max_speed (m/s), nonfinite, escaped,
        speed_clamps (velocities the speed limit cfl * h / dt cut in the last step; 0 unless the
        limit changed the motion)."""
        s = _world_stats(self._ptr())
        return {"time": s.time, "steps": int(s.steps), "particles": int(s.particles),
                "density_error_avg": s.density_error_avg,
                "density_error_max": s.density_error_max, "max_speed": s.max_speed,
                "nonfinite": int(s.nonfinite), "escaped": int(s.escaped),
                "speed_clamps": int(s.speed_clamps), "bad_stage": _text(s.bad_stage)}

    @property
    def time(self):
        return _world_stats(self._ptr()).time

    def close(self):
        """Releases the world (its memory goes when no Particles view refers to it either)."""
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._handle is None else f"t = {self.time:g} s"
        return f"<pbf.World {self.name!r}: {state}>"


def devices():
    """The compute devices of this machine that a scene's "device" key takes: a list of dicts
    with id ("cpu", "opencl:0.0", "cuda:0"), name, driver, memory (bytes), compute_units."""
    table = (_DeviceInfo * 64)()
    n = min(_list_devices(table, len(table), None, 0), len(table))
    return [{"id": _text(d.id), "name": _text(d.name), "driver": _text(d.driver),
             "memory": int(d.memory), "compute_units": int(d.compute_units)} for d in table[:n]]
