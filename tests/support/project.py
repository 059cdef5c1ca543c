"""What the project's own files declare, read once for the tests that hold other files
to it: the docs' published address and the Python versions the classifiers name."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def site_url() -> str:
    """mkdocs.yml's `site_url`: where the docs are published."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    found = re.search(r"^site_url: (\S+)$", config, flags=re.MULTILINE)
    assert found is not None, "mkdocs.yml names its site_url"
    return found[1]


def classifier_pythons(classifiers: list[str]) -> list[str]:
    """The Python versions `classifiers` name, as "3.11", in their order."""
    return [c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
