"""`.ci/system-deps` says what is missing where it cannot install it, instead of
failing on a `sudo` the machine does not have."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_without_root_or_sudo_it_names_the_missing_packages_and_stops(tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "ls"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    (tools / "python3").symlink_to(sys.executable)  # this one has venv support
    (tools / "id").write_text("#!/bin/sh\necho 1000\n")  # not root
    (tools / "id").chmod(0o755)
    done = subprocess.run(
        [str(tools / "bash"), str(ROOT / ".ci" / "system-deps")],
        env={**os.environ, "PATH": str(tools)}, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 1
    assert "system-deps: these Debian packages are missing:" in done.stderr
    assert "chromium" in done.stderr and "install them as root" in done.stderr


def test_a_python_without_venv_support_is_named(tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "ls"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    (tools / "python3").write_text("#!/bin/sh\nexit 1\n")  # as a bare Debian python3 without ensurepip
    (tools / "python3").chmod(0o755)
    (tools / "id").write_text("#!/bin/sh\necho 1000\n")
    (tools / "id").chmod(0o755)
    done = subprocess.run(
        [str(tools / "bash"), str(ROOT / ".ci" / "system-deps")],
        env={**os.environ, "PATH": str(tools)}, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 1
    assert "python3-venv" in done.stderr

