"""`.ci/system-deps` says what is missing where it cannot install it, instead of
failing on a `sudo` the machine does not have."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_as_a_user_without_sudo(tmp_path: Path, python3: str) -> subprocess.CompletedProcess[str]:
    """Run system-deps with a PATH of its own: bash, ls, `python3` (a script's text,
    or a path to link), an `id` that says uid 1000, and no sudo, pg_ctl or chromium."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "ls"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    if python3.startswith("#!"):
        (tools / "python3").write_text(python3)
        (tools / "python3").chmod(0o755)
    else:
        (tools / "python3").symlink_to(python3)
    (tools / "id").write_text("#!/bin/sh\necho 1000\n")
    (tools / "id").chmod(0o755)
    return subprocess.run(
        [str(tools / "bash"), str(ROOT / ".ci" / "system-deps")],
        env={**os.environ, "PATH": str(tools)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_root_or_sudo_it_names_the_missing_packages_and_stops(tmp_path: Path) -> None:
    done = _run_as_a_user_without_sudo(tmp_path, sys.executable)  # a python3 with venv support
    assert done.returncode == 1
    assert "system-deps: these Debian packages are missing:" in done.stderr
    assert "chromium" in done.stderr and "shellcheck" in done.stderr and "install them as root" in done.stderr


def test_a_python_without_venv_support_is_named(tmp_path: Path) -> None:
    # As a bare Debian python3 without ensurepip: the import fails.
    done = _run_as_a_user_without_sudo(tmp_path, "#!/bin/sh\nexit 1\n")
    assert done.returncode == 1
    assert "python3-venv" in done.stderr
