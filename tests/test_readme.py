"""The README's example runs and its commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_readme_example_runs() -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(example.splitlines()) <= 25
    exec(compile(example, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, flags=re.S)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()
