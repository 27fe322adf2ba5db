"""Imports a pbf surface mesh series into Blender as an animated liquid, and renders it.

    blender -b --factory-startup --python scripts/blender_import.py -- DIR [options]

DIR holds mesh_NNNNN.ply (or .obj) files, from `pbf run --mesh` or `pbf mesh DIR`, and the
scene.json that `pbf run` writes beside them. Each mesh becomes one object, shown only from
its frame number to the next mesh's (Blender frame N = pbf frame N; the scene runs at the
run's fps), with smooth shading and the file's vertex normals. The script adds:

  - a water material: Principled BSDF with full transmission, IOR 1.33 (so Fresnel
    reflection at grazing angles) and a slight roughness, and blue-green volume absorption
    scaled to the container's size;
  - the container's floor (a checkerboard) and its edges, the scene's obstacles as grey boxes;
  - a camera: the scene's "camera" (position, target, fov) or the view `pbf render` uses by
    default (the container from the front-right, above), --camera-pos/--camera-target/--fov
    replace its parts; a sun and a sky gradient as the world.

pbf's y axis (up) becomes Blender's z: a pbf point (x, y, z) is at Blender (x, -z, y).

Options:
  --frames A:B          import only meshes A to B (either end may be left out)
  --render LIST         render these frames with Cycles on the CPU: N, A:B or N,M,... (e.g. 24)
  --out DIR2            where the rendered blender_NNNNN.png go (default DIR)
  --size WxH            render size in pixels (default 960x540)
  --samples N           Cycles samples per pixel (default 32)
  --threads N           render threads (default: all cores)
  --camera-pos X,Y,Z    camera position, in pbf's coordinates (m)
  --camera-target X,Y,Z the point the camera looks at, in pbf's coordinates (m)
  --fov DEG             vertical field of view, degrees
  --save FILE.blend     save the Blender file (the meshes are stored in it)
  --report FILE.json    write what was imported (per frame: object, counts, bounds in
                        Blender's coordinates, the frames where it is visible)

Exit status: 0 success, 2 bad arguments or files (the message names them), 1 other errors.
"""

import argparse
import json
import math
import os
import re
import sys
import time

import bpy
import numpy as np
from mathutils import Vector

PROG = "blender_import.py"


class ImportFailure(Exception):
    """An error in the arguments or the files: reported without a traceback, exit status 2."""


def fail(message):
    raise ImportFailure(message)


# ---- arguments ---------------------------------------------------------------------------------


def parse_vec3(text, option):
    parts = text.split(",")
    try:
        v = [float(p) for p in parts]
    except ValueError:
        v = []
    if len(v) != 3 or not all(math.isfinite(c) for c in v):
        fail(f'{option} "{text}": expected X,Y,Z (three numbers, m), e.g. 2,1.5,3')
    return v


def parse_range(text, option):
    m = re.fullmatch(r"(\d*):(\d*)", text)
    if not m or (m.group(1) and m.group(2) and int(m.group(1)) > int(m.group(2))):
        fail(f'{option} "{text}": expected A:B, A: or :B with 0 <= A <= B')
    lo = int(m.group(1)) if m.group(1) else 0
    hi = int(m.group(2)) if m.group(2) else 1 << 30
    return lo, hi


def parse_frame_list(text):
    frames = []
    for part in text.split(","):
        if ":" in part:
            lo, hi = parse_range(part, "--render")
            if hi == 1 << 30:
                fail(f'--render "{text}": a range needs its end, e.g. 10:20')
            frames.extend(range(lo, hi + 1))
        elif part.isdigit():
            frames.append(int(part))
        else:
            fail(f'--render "{text}": expected frame numbers N, A:B or N,M,..., e.g. 24')
    return sorted(set(frames))


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    p = argparse.ArgumentParser(
        prog="blender -b --python scripts/blender_import.py --",
        description="Imports a pbf mesh series (mesh_NNNNN.ply/.obj) into Blender.")
    p.add_argument("dir")
    p.add_argument("--frames")
    p.add_argument("--render")
    p.add_argument("--out")
    p.add_argument("--size", default="960x540")
    p.add_argument("--samples", type=int, default=32)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--camera-pos")
    p.add_argument("--camera-target")
    p.add_argument("--fov", type=float)
    p.add_argument("--save")
    p.add_argument("--report")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        raise ImportFailure("bad arguments (see the usage above)") from e
    m = re.fullmatch(r"(\d+)[xX](\d+)", a.size)
    if not m or not (16 <= int(m.group(1)) <= 8192 and 16 <= int(m.group(2)) <= 8192):
        fail(f'--size "{a.size}": expected WxH with each in [16, 8192], e.g. 960x540')
    a.width, a.height = int(m.group(1)), int(m.group(2))
    if a.samples < 1:
        fail(f"--samples {a.samples}: must be at least 1")
    if a.fov is not None and not 1 < a.fov < 170:
        fail(f"--fov {a.fov}: must be in (1, 170) degrees")
    a.range = parse_range(a.frames, "--frames") if a.frames else (0, 1 << 30)
    a.render_frames = parse_frame_list(a.render) if a.render else []
    if a.camera_pos:
        a.camera_pos = parse_vec3(a.camera_pos, "--camera-pos")
    if a.camera_target:
        a.camera_target = parse_vec3(a.camera_target, "--camera-target")
    return a


# ---- mesh files --------------------------------------------------------------------------------

PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "<i2",
             "int16": "<i2", "ushort": "<u2", "uint16": "<u2", "int": "<i4", "int32": "<i4",
             "uint": "<u4", "uint32": "<u4", "float": "<f4", "float32": "<f4", "double": "<f8",
             "float64": "<f8"}


def read_ply(path):
    """Binary little-endian PLY: vertex x y z [nx ny nz], triangle faces. Returns
    (positions (n, 3), normals (n, 3) or None, triangles (m, 3))."""
    with open(path, "rb") as f:
        if f.readline().strip() != b"ply":
            fail(f"{path}: not a PLY file")
        elements = []
        fmt = None
        while True:
            line = f.readline()
            if not line:
                fail(f"{path}: the PLY header has no end_header")
            words = line.decode("ascii", "replace").split()
            if not words:
                continue
            if words[0] == "end_header":
                break
            if words[0] == "format":
                fmt = words[1]
            elif words[0] == "element":
                elements.append((words[1], int(words[2]), []))
            elif words[0] == "property" and elements:
                elements[-1][2].append(words[1:])
        if fmt != "binary_little_endian":
            fail(f"{path}: PLY format {fmt}: only binary_little_endian is read (as pbf writes)")
        pos = nrm = tris = None
        for name, count, props in elements:
            if any(p[0] == "list" for p in props):
                if name != "face" or len(props) != 1:
                    fail(f"{path}: PLY element {name} with lists is not supported")
                _, count_type, index_type, _ = props[0]
                dt = np.dtype([("n", PLY_TYPES[count_type]), ("i", PLY_TYPES[index_type], 3)])
                data = np.frombuffer(f.read(dt.itemsize * count), dtype=dt)
                if len(data) != count:
                    fail(f"{path}: ends inside the faces ({len(data)} of {count})")
                if count and not np.all(data["n"] == 3):
                    fail(f"{path}: only triangle faces are supported")
                tris = data["i"].astype(np.int64)
            else:
                dt = np.dtype([(p[1], PLY_TYPES[p[0]]) for p in props])
                data = np.frombuffer(f.read(dt.itemsize * count), dtype=dt)
                if len(data) != count:
                    fail(f"{path}: ends inside element {name} ({len(data)} of {count})")
                if name == "vertex":
                    names = dt.names
                    if not all(k in names for k in ("x", "y", "z")):
                        fail(f"{path}: the vertices have no x, y, z")
                    pos = np.stack([data[k].astype(np.float64) for k in ("x", "y", "z")], 1)
                    if all(k in names for k in ("nx", "ny", "nz")):
                        nrm = np.stack([data[k].astype(np.float64) for k in ("nx", "ny", "nz")], 1)
    if pos is None:
        fail(f"{path}: no vertex element")
    if tris is None:
        tris = np.zeros((0, 3), dtype=np.int64)
    return pos, nrm, tris


def read_obj(path):
    """Wavefront OBJ: v, vn, f (polygons become fans). Returns as read_ply."""
    pos, vn, tris, corner_n = [], [], [], []
    with open(path, "r", encoding="ascii", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("v "):
                pos.append([float(t) for t in line.split()[1:4]])
            elif line.startswith("vn "):
                vn.append([float(t) for t in line.split()[1:4]])
            elif line.startswith("f "):
                corners = []
                for tok in line.split()[1:]:
                    parts = tok.split("/")
                    v = int(parts[0])
                    n = int(parts[2]) if len(parts) > 2 and parts[2] else 0
                    v = v - 1 if v > 0 else len(pos) + v
                    n = (n - 1 if n > 0 else len(vn) + n) if n else -1
                    if not 0 <= v < len(pos):
                        fail(f"{path}:{lineno}: face vertex {parts[0]} does not exist")
                    corners.append((v, n))
                for k in range(2, len(corners)):
                    tri = (corners[0], corners[k - 1], corners[k])
                    tris.append([c[0] for c in tri])
                    corner_n.append([c[1] for c in tri])
    pos = np.array(pos, dtype=np.float64).reshape(-1, 3)
    tris = np.array(tris, dtype=np.int64).reshape(-1, 3)
    nrm = None
    if vn and corner_n and min(min(c) for c in corner_n) >= 0:
        vn = np.array(vn, dtype=np.float64)
        nrm = np.zeros_like(pos)
        nrm[tris.ravel()] = vn[np.array(corner_n).ravel()]
    return pos, nrm, tris


def to_blender(a):
    """pbf (x, y, z), y up -> Blender (x, -z, y), z up."""
    return np.stack([a[:, 0], -a[:, 2], a[:, 1]], 1)


def vec_to_blender(v):
    return Vector((v[0], -v[2], v[1]))


def find_meshes(directory, lo, hi):
    found = {}
    for name in os.listdir(directory):
        m = re.fullmatch(r"mesh_(\d{5,9})\.(ply|obj)", name)
        if m and lo <= int(m.group(1)) <= hi:
            n = int(m.group(1))
            if n not in found or m.group(2) == "ply":
                found[n] = os.path.join(directory, name)
    return [(n, found[n]) for n in sorted(found)]


def make_mesh_object(name, pos, nrm, tris, material, collection):
    me = bpy.data.meshes.new(name)
    nv, nt = len(pos), len(tris)
    if nt and (tris.min() < 0 or tris.max() >= nv):
        fail(f"{name}: a triangle refers to a vertex that does not exist")
    me.vertices.add(nv)
    me.vertices.foreach_set("co", to_blender(pos).astype(np.float32).ravel())
    me.loops.add(3 * nt)
    me.loops.foreach_set("vertex_index", tris.astype(np.int32).ravel())
    me.polygons.add(nt)
    me.polygons.foreach_set("loop_start", np.arange(0, 3 * nt, 3, dtype=np.int32))
    me.polygons.foreach_set("loop_total", np.full(nt, 3, dtype=np.int32))
    me.update(calc_edges=True)
    me.polygons.foreach_set("use_smooth", np.ones(nt, dtype=bool))
    if nrm is not None and nv:
        n = to_blender(nrm)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.where(length > 0, n / np.maximum(length, 1e-30), [0.0, 0.0, 1.0])
        me.use_auto_smooth = True
        me.normals_split_custom_set_from_vertices(n.tolist())
    me.materials.append(material)
    obj = bpy.data.objects.new(name, me)
    collection.objects.link(obj)
    return obj


# ---- materials, world, container ---------------------------------------------------------------


def water_material(extent):
    mat = bpy.data.materials.new("pbf water")
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (0.85, 0.95, 1.0, 1.0)
    bsdf.inputs["Transmission"].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.33
    bsdf.inputs["Roughness"].default_value = 0.02
    bsdf.inputs["Specular"].default_value = 0.5
    absorb = nodes.new("ShaderNodeVolumeAbsorption")
    absorb.inputs["Color"].default_value = (0.25, 0.62, 0.78, 1.0)
    absorb.inputs["Density"].default_value = 4.0 / extent
    links.new(absorb.outputs["Volume"], nodes["Material Output"].inputs["Volume"])
    mat.diffuse_color = (0.3, 0.6, 0.85, 0.6)  # the viewport's solid colour
    return mat


def plain_material(name, rgb, roughness=0.6):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = (*rgb, 1.0)
    return mat


def floor_material(tile):
    mat = bpy.data.materials.new("pbf floor")
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes["Principled BSDF"]
    bsdf.inputs["Roughness"].default_value = 0.7
    coords = nodes.new("ShaderNodeTexCoord")
    checker = nodes.new("ShaderNodeTexChecker")
    checker.inputs["Color1"].default_value = (0.70, 0.71, 0.72, 1.0)
    checker.inputs["Color2"].default_value = (0.52, 0.54, 0.56, 1.0)
    checker.inputs["Scale"].default_value = 1.0 / (2.0 * tile)
    links.new(coords.outputs["Object"], checker.inputs["Vector"])
    links.new(checker.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


def nice_tile(extent):
    raw = extent / 16.0
    p = 10 ** math.floor(math.log10(raw))
    m = raw / p
    return p * (1 if m < 1.5 else 2 if m < 3.5 else 5)


def setup_world():
    world = bpy.data.worlds.new("pbf sky")
    world.use_nodes = True
    nodes, links = world.node_tree.nodes, world.node_tree.links
    bg = nodes["Background"]
    coords = nodes.new("ShaderNodeTexCoord")
    sep = nodes.new("ShaderNodeSeparateXYZ")
    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.elements[0].position = 0.3
    ramp.color_ramp.elements[0].color = (0.66, 0.70, 0.76, 1.0)  # ground
    ramp.color_ramp.elements[1].position = 1.0
    ramp.color_ramp.elements[1].color = (0.18, 0.38, 0.80, 1.0)  # zenith
    mid = ramp.color_ramp.elements.new(0.5)
    mid.color = (0.85, 0.90, 0.96, 1.0)  # horizon
    ramp.color_ramp.interpolation = "EASE"
    maprange = nodes.new("ShaderNodeMapRange")
    maprange.inputs["From Min"].default_value = -1.0
    maprange.inputs["From Max"].default_value = 1.0
    links.new(coords.outputs["Generated"], sep.inputs["Vector"])
    links.new(sep.outputs["Z"], maprange.inputs["Value"])
    links.new(maprange.outputs["Result"], ramp.inputs["Fac"])
    links.new(ramp.outputs["Color"], bg.inputs["Color"])
    bg.inputs["Strength"].default_value = 1.0
    bpy.context.scene.world = world


def add_box(name, lo, hi, material, collection, wire=None):
    lo_b, hi_b = vec_to_blender(lo), vec_to_blender(hi)
    centre = (lo_b + hi_b) / 2
    size = Vector([abs(hi_b[k] - lo_b[k]) for k in range(3)])
    me = bpy.data.meshes.new(name)
    corners = [(x, y, z) for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)]
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    me.from_pydata([tuple(c[k] * size[k] for k in range(3)) for c in corners], [], faces)
    me.materials.append(material)
    obj = bpy.data.objects.new(name, me)
    obj.location = centre
    collection.objects.link(obj)
    if wire:
        mod = obj.modifiers.new("edges", "WIREFRAME")
        mod.thickness = wire
        mod.use_even_offset = True
    return obj


def default_camera(lo, hi, aspect):
    """pbf_camera_default (app/io/camera.c): the container from the front-right, above."""
    fov = 40.0
    d = np.array([0.38, 0.48, 1.0])
    d /= np.linalg.norm(d)
    up = np.array([0.0, 1.0, 0.0])
    right = np.cross(up, d)
    right /= np.linalg.norm(right)
    cam_up = np.cross(d, right)
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    centre = 0.5 * (lo + hi)
    ty = math.tan(math.radians(fov) / 2) * 0.92
    tx = ty * aspect
    dist = 0.0
    for k in range(8):
        p = np.array([hi[0] if k & 1 else lo[0], hi[1] if k & 2 else lo[1],
                      hi[2] if k & 4 else lo[2]]) - centre
        along = p @ d
        dist = max(dist, along + abs(p @ right) / tx, along + abs(p @ cam_up) / ty)
    dist = dist if dist > 0 else 1.0
    return list(centre + d * dist), list(centre), fov


def setup_camera(scene_def, args):
    lo, hi = scene_def["domain_min"], scene_def["domain_max"]
    pos, target, fov = default_camera(lo, hi, args.width / args.height)
    cam_def = scene_def.get("camera")
    if cam_def:
        pos = cam_def.get("position", pos)
        target = cam_def.get("target", target)
        fov = cam_def.get("fov", fov)
    if args.camera_pos:
        pos = args.camera_pos
    if args.camera_target:
        target = args.camera_target
    if args.fov:
        fov = args.fov
    if np.allclose(pos, target):
        fail("the camera's position and target are the same point")
    cam_data = bpy.data.cameras.new("pbf camera")
    cam_data.sensor_fit = "VERTICAL"
    cam_data.angle = math.radians(fov)
    extent = max(h - l for h, l in zip(hi, lo))
    cam_data.clip_start = extent * 1e-3
    cam_data.clip_end = extent * 100
    cam = bpy.data.objects.new("pbf camera", cam_data)
    cam.location = vec_to_blender(pos)
    direction = vec_to_blender(target) - vec_to_blender(pos)
    cam.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.collection.objects.link(cam)
    bpy.context.scene.camera = cam
    return {"position": list(pos), "target": list(target), "fov": fov}


def setup_sun(cam_loc, target):
    """A sun high up, from the left of the camera and beyond the scene (glints on the water)."""
    sun_data = bpy.data.lights.new("pbf sun", "SUN")
    sun_data.energy = 3.0
    sun_data.angle = math.radians(4.0)
    sun = bpy.data.objects.new("pbf sun", sun_data)
    forward = (target - cam_loc)
    forward.z = 0
    forward = forward.normalized() if forward.length > 0 else Vector((0, 1, 0))
    left = Vector((0, 0, 1)).cross(forward).normalized()
    towards_sun = (0.6 * forward + 0.3 * left + Vector((0, 0, 1))).normalized()
    sun.rotation_euler = (-towards_sun).to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.collection.objects.link(sun)


# ---- the whole import --------------------------------------------------------------------------


def main():
    args = parse_args()
    directory = args.dir.rstrip("/") or "/"
    if not os.path.isdir(directory):
        fail(f"{directory}: not a directory")
    scene_path = os.path.join(directory, "scene.json")
    try:
        with open(scene_path, encoding="utf-8") as f:
            scene_def = json.load(f)
    except OSError as e:
        fail(f"{scene_path}: {e.strerror}; `pbf run` writes it beside the frames")
    except json.JSONDecodeError as e:
        fail(f"{scene_path}: not JSON: {e}")
    for key in ("domain_min", "domain_max"):
        if not (isinstance(scene_def.get(key), list) and len(scene_def[key]) == 3):
            fail(f'{scene_path}: "{key}" is missing or not [x, y, z]')
    meshes = find_meshes(directory, *args.range)
    if not meshes:
        fail(f"{directory}: no mesh_NNNNN.ply or .obj files"
             f"{' in --frames ' + args.frames if args.frames else ''}; make them with "
             f"`pbf mesh {directory}` or `pbf run --mesh`")
    missing = [n for n in args.render_frames if not meshes[0][0] <= n <= meshes[-1][0]]
    if missing:
        fail(f"--render: frame {missing[0]} is outside the imported meshes "
             f"({meshes[0][0]} to {meshes[-1][0]})")

    # an empty scene
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj, do_unlink=True)
    scene = bpy.context.scene
    lo, hi = scene_def["domain_min"], scene_def["domain_max"]
    extent = max(h - l for h, l in zip(hi, lo))
    fps = float(scene_def.get("fps", 60))
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_start, scene.frame_end = meshes[0][0], meshes[-1][0]
    scene.render.resolution_x, scene.render.resolution_y = args.width, args.height
    scene.render.resolution_percentage = 100

    water = water_material(extent)
    liquid = bpy.data.collections.new("pbf liquid")
    scene.collection.children.link(liquid)
    report = {"directory": os.path.abspath(directory), "frames": []}
    t0 = time.time()
    objects = []
    for k, (number, path) in enumerate(meshes):
        pos, nrm, tris = read_obj(path) if path.endswith(".obj") else read_ply(path)
        if not np.all(np.isfinite(pos)):
            fail(f"{path}: a vertex has a non-finite coordinate")
        obj = make_mesh_object(f"liquid {number:05d}", pos, nrm, tris, water, liquid)
        # No shadow: refracted sunlight (caustics) is off, and a shadowing surface would leave
        # the floor under the water in the dark.
        obj.visible_shadow = False
        objects.append((number, obj))
        bpos = to_blender(pos) if len(pos) else np.zeros((1, 3))
        report["frames"].append({
            "number": number, "file": os.path.basename(path), "object": obj.name,
            "vertices": len(pos), "triangles": len(tris),
            "bounds_min": bpos.min(0).tolist(), "bounds_max": bpos.max(0).tolist()})
        print(f"{PROG}: {k + 1}/{len(meshes)} {os.path.basename(path)}: {len(pos)} vertices, "
              f"{len(tris)} triangles", flush=True)
    # each object shown from its frame to the next mesh's
    for k, (number, obj) in enumerate(objects):
        keys = [(number, False)]
        if number > scene.frame_start:
            keys.append((scene.frame_start, True))
        if k + 1 < len(objects):
            keys.append((objects[k + 1][0], True))
        for frame, hidden in keys:
            obj.hide_viewport = obj.hide_render = hidden
            obj.keyframe_insert("hide_viewport", frame=frame)
            obj.keyframe_insert("hide_render", frame=frame)
    print(f"{PROG}: imported {len(objects)} meshes (frames {scene.frame_start} to "
          f"{scene.frame_end}) in {time.time() - t0:.1f} s", flush=True)

    # the container: floor, edges, obstacles
    stage = bpy.data.collections.new("pbf container")
    scene.collection.children.link(stage)
    floor_me = bpy.data.meshes.new("pbf floor")
    x0, x1, z0, z1, y0 = lo[0], hi[0], lo[2], hi[2], lo[1]
    floor_me.from_pydata([(x0, -z0, y0), (x1, -z0, y0), (x1, -z1, y0), (x0, -z1, y0)], [],
                         [(0, 3, 2, 1)])
    floor_me.materials.append(floor_material(nice_tile(max(x1 - x0, z1 - z0))))
    floor = bpy.data.objects.new("pbf floor", floor_me)
    stage.objects.link(floor)
    dark = plain_material("pbf edges", (0.05, 0.06, 0.08))
    add_box("pbf container edges", lo, hi, dark, stage, wire=extent * 0.003)
    grey = plain_material("pbf obstacle", (0.55, 0.55, 0.57))
    for i, box in enumerate(scene_def.get("obstacles", [])):
        add_box(f"pbf obstacle {i}", box["min"], box["max"], grey, stage)
    walls = scene_def.get("moving_walls", [])
    if walls:
        print(f"{PROG}: note: {len(walls)} moving wall(s) not drawn (their motion is not "
              f"animated here)", flush=True)

    report["camera"] = setup_camera(scene_def, args)
    setup_sun(scene.camera.location, vec_to_blender(report["camera"]["target"]))
    setup_world()
    report["frame_start"], report["frame_end"] = scene.frame_start, scene.frame_end
    report["fps"] = scene.render.fps / scene.render.fps_base
    report["material"] = {"name": water.name, "transmission": 1.0, "ior": 1.33}
    # visibility as Blender evaluates it, frame by frame
    numbers = [n for n, _ in objects]
    for entry, (number, obj) in zip(report["frames"], objects):
        entry["visible_at"] = []
    for frame in numbers:
        scene.frame_set(frame)
        for entry, (number, obj) in zip(report["frames"], objects):
            if not obj.hide_render and not obj.hide_viewport:
                entry["visible_at"].append(frame)

    # Cycles on the CPU
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = args.samples
    scene.cycles.use_denoising = False  # Debian's Blender is built without a denoiser
    scene.cycles.max_bounces = 12
    scene.cycles.transmission_bounces = 12
    scene.cycles.transparent_max_bounces = 8
    scene.cycles.caustics_reflective = False
    scene.cycles.caustics_refractive = False
    scene.cycles.blur_glossy = 1.0
    scene.cycles.sample_clamp_indirect = 3.0  # no fireflies from the sun's glints
    scene.render.image_settings.file_format = "PNG"
    if args.threads > 0:
        scene.render.threads_mode = "FIXED"
        scene.render.threads = args.threads
    if args.save:
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.save))
        print(f"{PROG}: saved {args.save}", flush=True)
    out_dir = args.out or directory
    if args.render_frames:
        os.makedirs(out_dir, exist_ok=True)
    report["rendered"] = []
    for frame in args.render_frames:
        scene.frame_set(frame)
        path = os.path.abspath(os.path.join(out_dir, f"blender_{frame:05d}.png"))
        scene.render.filepath = path
        t0 = time.time()
        bpy.ops.render.render(write_still=True)
        report["rendered"].append(path)
        print(f"{PROG}: rendered frame {frame} at {args.width}x{args.height}, {args.samples} "
              f"samples, in {time.time() - t0:.1f} s: {path}", flush=True)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except ImportFailure as e:
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(2)
    except Exception as e:  # noqa: BLE001 - any other failure: a message and status 1
        import traceback
        traceback.print_exc()
        print(f"{PROG}: {e}", file=sys.stderr, flush=True)
        os._exit(1)
