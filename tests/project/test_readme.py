"""The README's example runs, its commands are the ones CI runs, and a test that
hangs under the README's test command ends the run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.project import site_url

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_readme_example_runs() -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert len(example.splitlines()) <= 25
    exec(compile(example, "README.md", "exec"), {"__name__": "readme"})


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, flags=re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_contributing_builds_the_distributions_as_ci_does() -> None:
    page = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = page[page.index("## Build the distributions") :]
    (block,) = re.findall(r"```bash\n(.*?)\n```", section.split("\n## ")[0], flags=re.DOTALL)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert block.splitlines() and all(line in ci for line in block.splitlines())


def test_a_hung_test_ends_the_run_with_its_traceback(tmp_path: Path) -> None:
    """The project's pytest settings stop a run whose test hangs, instead of letting CI
    wait; only the limit (900 s in pyproject.toml) is shortened here."""
    (tmp_path / "test_hangs.py").write_text("import threading\n\ndef test_hangs():\n    threading.Event().wait()\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            "-p",
            "no:cacheprovider",
            "-o",
            "faulthandler_timeout=1",
            "test_hangs.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Timeout (0:00:01)!" in done.stderr
    assert 'test_hangs.py", line 4 in test_hangs' in done.stderr


BARE = re.compile(r"(?:^|&&|;|\||\()\s*(python|pip|mkdocs|pytest)(?=\s)")
"""A tool named without a path: `python -m lionmem`, `mkdocs serve`..."""

INSTALLED = re.compile(r'(pip install (lionmem|"lionmem\[[a-z,]+\]")|python -m (lionmem|asyncio))(\s|$)')
"""What a user types in the environment lionmem is installed in: installing it from the
index, and running its command line or an asyncio REPL."""


def _commands(text: str) -> list[str]:
    """The shell commands of a Markdown text: the lines of its bash and console blocks
    (a console block's commands are its `$ ` lines) and its inline code."""
    found: list[str] = []
    for kind, block in re.findall(r"```(bash|console)\n(.*?)```", text, flags=re.DOTALL):
        lines = block.splitlines()
        found += [line[2:] for line in lines if line.startswith("$ ")] if kind == "console" else lines
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    # A table's cells name what was measured; they are not commands to type.
    prose = "\n".join(line for line in prose.splitlines() if not line.startswith("|"))
    found += re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose)
    return found


def test_the_checkout_pages_name_the_venvs_tools_by_path() -> None:
    """README and CONTRIBUTING speak to someone in a checkout after the README's
    commands, which make `.venv` and never activate it, so they name the venv's tools
    by path; `python3` makes the venv. Installing from the index, the installed
    command and an asyncio REPL are a user's and need no path."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    bare = [
        f"{page.relative_to(ROOT)}: {command}"
        for page in pages
        for command in _commands(page.read_text(encoding="utf-8"))
        if BARE.search(command) and not INSTALLED.match(command)
    ]
    assert bare == []
    assert not INSTALLED.match("pip install -e .") and not INSTALLED.match("python -m pytest")


def test_the_docs_speak_to_a_user_who_installed_lionmem_with_pip() -> None:
    """Every page of the site is written for someone who ran `pip install lionmem`:
    its commands are `pip install` of lionmem and its extras, the `lionmem` command
    and `python -m asyncio`, with no path into a checkout's venv and no editable
    install. The checkout's voice lives in README and CONTRIBUTING."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    wrong = [
        f"{page.relative_to(ROOT)}: {command}"
        for page in pages
        for command in _commands(page.read_text(encoding="utf-8"))
        if CHECKOUT.search(command) or (BARE.search(command) and not USERS.match(command))
    ]
    assert wrong == []
    assert CHECKOUT.search(".venv/bin/python -m lionmem demo") and CHECKOUT.search('pip install -e ".[recall]"')
    assert not USERS.match("python -m lionmem demo") and USERS.match('pip install "lionmem[recall]"')
    assert (
        len([c for page in pages for c in _commands(page.read_text(encoding="utf-8")) if c.startswith("lionmem ")]) > 50
    )


CHECKOUT = re.compile(r"\.venv/|pip install -e|python -m lionmem")
"""A command that only works in a checkout, or the module form the installed command replaces."""

USERS = re.compile(r'(pip install (lionmem|"lionmem\[[a-z,]+\]")|python -m asyncio)(\s|$)')
"""What a pip user types besides `lionmem`: installing it, and an asyncio REPL."""


def test_the_documented_site_build_prints_only_mkdocs_own_lines(tmp_path: Path) -> None:
    """Material prints a coloured notice on every build unless NO_MKDOCS_2_WARNING is
    set, even into a file; every documented mkdocs command sets it."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    mkdocs = [c for page in pages for c in _commands(page.read_text(encoding="utf-8")) if "mkdocs " in c]
    assert mkdocs and all(c.startswith("NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs ") for c in mkdocs), mkdocs
    build = next(c for c in mkdocs if " build" in c)
    # The README's venv is the one running this test, wherever it is.
    argv = shlex.split(build.replace(".venv/bin/", f"{Path(sys.executable).parent}/"))
    setting, *command = argv
    name, _, value = setting.partition("=")
    environment = {k: v for k, v in os.environ.items() if k != name}
    done = subprocess.run(
        [*command, "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**environment, name: value},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert lines and all(line.startswith("INFO    -  ") for line in lines), lines


def test_the_readmes_links_into_the_docs_name_pages_that_exist() -> None:
    """PyPI shows the README, where a relative link is broken: the README links to the
    published site, each link to a page of this checkout's docs."""
    links = re.findall(rf"\]\({re.escape(site_url())}latest/([^)#]*)\)", README)
    assert len(links) >= 10
    for link in links:
        page = link.rstrip("/")
        assert (ROOT / "docs" / f"{page}.md").exists() or (ROOT / "docs" / page / "index.md").exists(), link
    assert not re.findall(r"\]\((?!https://)[^)]+\)", README), "a relative link breaks on PyPI"
