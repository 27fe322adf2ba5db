"""Children that die with their parent: importing this module makes every process the script
starts through `subprocess` (run, Popen, check_output, ...) receive SIGTERM when the script
itself ends, however it ends (kill -9 included), as `pbf validate`'s and `pbf bench`'s forked
jobs do (Linux prctl PR_SET_PDEATHSIG; elsewhere nothing changes). Every bench/*.py that starts
processes imports it first (tests/run_helpers_die.sh checks both)."""
import ctypes
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


if sys.platform.startswith("linux") and not getattr(subprocess.Popen, "_pbf_dies", False):
    _Popen = subprocess.Popen

    class _DyingPopen(_Popen):
        _pbf_dies = True

        def __init__(self, *args, **kwargs):
            outer = kwargs.get("preexec_fn")
            if outer is None:
                kwargs["preexec_fn"] = _die_with_parent
            else:
                def both():
                    _die_with_parent()
                    outer()
                kwargs["preexec_fn"] = both
            super().__init__(*args, **kwargs)

    subprocess.Popen = _DyingPopen
