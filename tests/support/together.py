"""Child processes that start their work at the same moment, for tests of stores
shared between processes: started one by one, each would be done before the next
had imported lionmem."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

WAIT_FOR_GO = textwrap.dedent("""
    def wait_for_go():
        import pathlib, sys, time
        barrier = pathlib.Path(sys.argv[2])
        (barrier / f"ready-{sys.argv[1]}").touch()
        while not (barrier / "go").exists():
            time.sleep(0.001)
""")


def start_together(script: str, names: Sequence[str], barrier: Path) -> list[subprocess.Popen[bytes]]:
    """Run `script` once per name (its `sys.argv[1]`). The script calls `wait_for_go()`
    after its imports; this returns once every process waits there (or has ended), and
    lets them all go."""
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", WAIT_FOR_GO + script, name, str(barrier)]) for name in names]
    deadline = time.monotonic() + 60
    while len(list(barrier.glob("ready-*"))) < len(names) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    (barrier / "go").touch()
    return procs
