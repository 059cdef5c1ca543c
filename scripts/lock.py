"""Write the locks the test command installs from, or compare the newest releases with them.

`python scripts/lock.py` resolves each environment `.ci/run` makes in a fresh venv and
writes every package it installed, pinned, to `constraints/<name>-lock.txt`:

- `test`: the test extra, newest releases but for the holds in `constraints/holds.txt`;
- `floors`: the same, with `constraints/floors.txt`'s oldest releases of lionmem's own
  dependencies;
- `lionagi-oldest`: the same, with `constraints/lionagi-oldest.txt`'s lionagi.

The README's test command installs with `-c constraints/test-lock.txt`, so that a first
run on a fresh clone passes on any day, whatever was released since.

`python scripts/lock.py --compare FREEZE` reads a `pip freeze` of an environment resolved
with no lock (the scheduled `newest` workflow's) and prints each package whose version
differs from the test lock, so a failing run says which releases it is the first to meet.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints"
HOLDS = CONSTRAINTS / "holds.txt"
# Each lock and the constraints it is resolved under, beside the holds.
ENVIRONMENTS: dict[str, tuple[Path, ...]] = {
    "test": (),
    "floors": (CONSTRAINTS / "floors.txt",),
    "lionagi-oldest": (CONSTRAINTS / "lionagi-oldest.txt",),
}


def lock_path(name: str) -> Path:
    """The lock file of one environment."""
    return CONSTRAINTS / f"{name}-lock.txt"


def pins(text: str) -> dict[str, str]:
    """{canonical name: version} of the `name==version` lines of a requirements text."""
    pinned: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            pinned[canonicalize_name(name.split("[", 1)[0])] = version.strip()
    return pinned


def resolve(name: str, sources: tuple[Path, ...], scratch: Path) -> str:
    """The `pip freeze` of a fresh venv with the test extra installed under `sources`."""
    python = scratch / name / "bin" / "python"
    venv.create(python.parent.parent, with_pip=True, clear=True)
    constraints = [arg for path in (HOLDS, *sources) for arg in ("-c", str(path))]
    subprocess.run([python, "-m", "pip", "install", "-q", *constraints, "-e", f"{ROOT}[test]"], check=True)
    frozen = subprocess.run(
        [python, "-m", "pip", "freeze", "--exclude-editable"], check=True, capture_output=True, text=True
    ).stdout
    return "\n".join(line for line in frozen.splitlines() if not line.startswith("lionmem")) + "\n"


def write(name: str, frozen: str) -> None:
    header = (
        f"# The {name} environment of .ci/run, every package pinned: written by scripts/lock.py\n"
        "# (run it to take newer releases; never edit this by hand).\n"
    )
    lock_path(name).write_text(header + frozen, encoding="utf-8")


def compare(frozen: str) -> list[tuple[str, str, str]]:
    """(package, locked, newest) for each package whose newest release differs from the lock."""
    locked, newest = pins(lock_path("test").read_text(encoding="utf-8")), pins(frozen)
    return [
        (package, locked.get(package, "-"), newest.get(package, "-"))
        for package in sorted(locked.keys() | newest.keys())
        if locked.get(package) != newest.get(package)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", type=Path, metavar="FREEZE", help="a pip freeze to compare with the test lock")
    args = parser.parse_args(argv)
    if args.compare:
        changed = compare(args.compare.read_text(encoding="utf-8"))
        print(f"{len(changed)} packages differ from constraints/test-lock.txt (package: locked -> newest)")
        for package, locked, newest in changed:
            print(f"  {package}: {locked} -> {newest}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, sources in ENVIRONMENTS.items():
            print(f"resolving {name} ...", file=sys.stderr)
            write(name, resolve(name, sources, Path(scratch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
