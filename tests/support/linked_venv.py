"""A venv made of links to this one's installed packages, less the ones left out: a
machine with fewer packages, made in a second and without asking an index."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def linked_venv(root: Path, leave_out: Callable[[str], bool]) -> Path:
    """A venv at `root` seeing every entry of this venv's site-packages whose name
    `leave_out` does not match; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    (site,) = (root / "lib").glob("python3.*/site-packages")
    for entry in Path(sys.prefix).glob("lib/python3.*/site-packages/*"):
        if not leave_out(entry.name):
            (site / entry.name).symlink_to(entry)
    return root / "bin" / "python"
