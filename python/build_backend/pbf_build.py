"""PEP 517 build backend of the pbf Python package (python/), standard library only.

`pip install ./python` calls build_wheel, which

1. gets the shared library libpbf: the file named by the environment variable PBF_LIBRARY if
   set (e.g. build/libpbf.so of a CMake build; a relative path is taken from the directory pip
   was started in), else it configures the repository around this
   folder with CMake in a temporary folder and builds the target pbf_shared (extra CMake
   arguments from PBF_CMAKE_ARGS, e.g. "-DPBF_CUDA=OFF"; parallel jobs from PBF_BUILD_JOBS);
2. writes a wheel of python/pbf/ with the library inside (pbf/libpbf.so) and the version of
   include/pbf/pbf.h.

There is no source distribution: the package is built from a checkout of the repository.
"""

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "pbf"
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # python/
REPO_ROOT = os.path.dirname(PACKAGE_ROOT)
SUMMARY = "Position Based Fluids (Macklin & Mueller 2013) liquid simulation: the pbf library from Python"


def _version():
    header = os.path.join(REPO_ROOT, "include", "pbf", "pbf.h")
    try:
        with open(header, encoding="utf-8") as f:
            m = re.search(r'^#define PBF_VERSION_STRING "([^"]+)"', f.read(), re.M)
    except OSError as e:
        raise RuntimeError(f"{header}: {e.strerror}; build the package from a checkout of pbf") from e
    if not m:
        raise RuntimeError(f"{header}: no PBF_VERSION_STRING")
    return m.group(1)


def _tag():
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def _metadata(version):
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "License: see the repository\n"
        "Requires-Python: >=3.8\n"
        "Requires-Dist: numpy\n"
    )


def _dist_info(version):
    return f"{NAME}-{version}.dist-info"


def _log(message):
    print(f"pbf build: {message}", file=sys.stderr, flush=True)


def _given_library(given):
    """PBF_LIBRARY as its user meant it. pip runs this backend in the package's folder (python/),
    not where pip was started, so a relative path is looked up first from the caller's working
    directory (the environment's PWD, which the shell sets and pip passes on), then from this
    process's and from the repository's top."""
    if os.path.isabs(given):
        candidates = [given]
    else:
        candidates = []
        caller = os.environ.get("PWD")
        if caller and os.path.isabs(caller) and os.path.isdir(caller):
            candidates.append(os.path.join(caller, given))
        candidates += [os.path.abspath(given), os.path.join(REPO_ROOT, given)]
        candidates = list(dict.fromkeys(os.path.normpath(c) for c in candidates))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise RuntimeError(f"PBF_LIBRARY={given}: no such file (a built libpbf.so; looked for "
                       f"{', '.join(candidates)})")


def _build_library(workdir):
    """Path of a built libpbf: PBF_LIBRARY, or a CMake build of the repository in workdir."""
    given = os.environ.get("PBF_LIBRARY")
    if given:
        path = _given_library(given)
        _log(f"bundling {path} (PBF_LIBRARY={given})")
        return path
    cmakelists = os.path.join(REPO_ROOT, "CMakeLists.txt")
    try:
        with open(cmakelists, encoding="utf-8") as f:
            is_pbf = re.search(r"project\(\s*pbf\b", f.read()) is not None
    except OSError:
        is_pbf = False
    if not is_pbf:
        raise RuntimeError(
            f"{REPO_ROOT} is not a pbf checkout (no CMakeLists.txt with project(pbf)): install "
            "from the repository (pip install ./python) or set PBF_LIBRARY to a built libpbf.so")
    if shutil.which("cmake") is None:
        raise RuntimeError("cmake not found: install CMake (Debian: apt-get install cmake), or set "
                           "PBF_LIBRARY to a built libpbf.so")
    build = os.path.join(workdir, "cmake-build")
    configure = ["cmake", "-S", REPO_ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 "-DBUILD_TESTING=OFF"] + shlex.split(os.environ.get("PBF_CMAKE_ARGS", ""))
    jobs = os.environ.get("PBF_BUILD_JOBS") or str(os.cpu_count() or 1)
    compile_ = ["cmake", "--build", build, "--target", "pbf_shared", "-j", jobs]
    for cmd in (configure, compile_):
        _log(" ".join(shlex.quote(c) for c in cmd))
        # the tools' output goes to stderr: pip shows it when the build fails (or with -v)
        rc = subprocess.call(cmd, stdout=sys.stderr.fileno())
        if rc != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed (exit {rc}); the output is above")
    for name in sorted(os.listdir(build)):
        path = os.path.join(build, name)
        if name.startswith("libpbf.so") and os.path.isfile(path) and not os.path.islink(path):
            return path
    raise RuntimeError(f"{build}: the build made no libpbf.so")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_dist_info(directory, version):
    info = os.path.join(directory, _dist_info(version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(version))
    return os.path.basename(info)


# ---- PEP 517 hooks ---------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, _version())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    dist_info = _dist_info(version)
    tag = _tag()
    files = []  # (arcname, bytes)
    source = os.path.join(PACKAGE_ROOT, NAME)
    for name in sorted(os.listdir(source)):
        if name.endswith(".py"):
            with open(os.path.join(source, name), "rb") as f:
                files.append((f"{NAME}/{name}", f.read()))
    files.append((f"{NAME}/_version.py", f'__version__ = "{version}"\n'.encode()))
    with tempfile.TemporaryDirectory(prefix="pbf-build-") as work:
        with open(_build_library(work), "rb") as f:
            files.append((f"{NAME}/libpbf.so", f.read()))
    files.append((f"{dist_info}/METADATA", _metadata(version).encode()))
    files.append((f"{dist_info}/WHEEL", (
        "Wheel-Version: 1.0\n"
        "Generator: pbf_build (python/build_backend)\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n").encode()))
    files.append((f"{dist_info}/top_level.txt", f"{NAME}\n".encode()))
    record = [_record_line(a, d) for a, d in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))

    wheel_name = f"{NAME}-{version}-{tag}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            z.writestr(zi, data)
    _log(f"wrote {wheel_name}")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("pbf has no source distribution: install from a checkout of the "
                       "repository with `pip install ./python`")
