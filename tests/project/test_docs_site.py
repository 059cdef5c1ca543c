"""The documentation site: a strict build, resolvable decision records, a real browser."""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import threading
from collections.abc import Iterator
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.support.project import site_url

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_strict_build_validates_links_and_anchors(site: Path) -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    assert "strict: true" in config and "anchors: warn" in config and "font: false" in config
    assert (site / "adr" / "0092-minimal-memory-store" / "index.html").exists()
    page = (site / "reference" / "lionmem.protocols.memory" / "index.html").read_text()
    assert "adr/0092-minimal-memory-store/#d3-the-reference-store-scans-a-pile" in page
    record = (site / "adr" / "0092-minimal-memory-store" / "index.html").read_text()
    assert "reference/lionmem.protocols.in_memory/#lionmem.protocols.in_memory.InMemoryStore" in record


@pytest.mark.parametrize(
    "path", ["lionmem.adapters.sqlite.SQLiteMemoryStore", "lionmem.adapters.postgres.PostgresMemoryStore"]
)
def test_a_durable_stores_page_documents_every_public_member_it_has(site: Path, path: str) -> None:
    """Those it inherits too: its deletes, scans and expiry live in shared classes, and
    are the store's all the same."""
    module, name = path.rsplit(".", 1)
    store = getattr(importlib.import_module(module), name)
    page = (site / "reference" / module / "index.html").read_text()
    public = sorted(member for member in dir(store) if not member.startswith("_"))
    assert [member for member in public if f'id="{path}.{member}"' not in page] == []


def test_no_page_fetches_anything_from_the_network(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = page.read_text()
        # Links may point anywhere, the page's canonical address included; nothing may
        # be loaded from elsewhere.
        assert not re.search(r'src="(https?:)?//', text), page
        assert not re.search(r'<link (?![^>]*rel="canonical")[^>]*href="(https?:)?//', text), page


ANCHOR = re.compile(r"\]\[(lionmem(?:\.\w+)*)\]")


def _resolve(path: str) -> object:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(path)  # pragma: no cover


@pytest.mark.parametrize("record", sorted((ROOT / "docs" / "adr").glob("0*.md")), ids=lambda p: p.stem)
def test_every_code_anchor_of_a_record_resolves(record: Path) -> None:
    anchors = ANCHOR.findall(record.read_text())
    assert anchors, f"{record.name} links to no code"
    for anchor in anchors:
        _resolve(anchor)


def test_the_performance_page_shows_the_committed_benchmark_results() -> None:
    # Each table, as `python -m benchmarks.reporting.tables` prints it from the results the
    # last `bench_stores` run wrote and the commit keeps.
    from benchmarks.reporting.tables import RESULTS, tables

    page = (ROOT / "docs" / "performance.md").read_text()
    found = tables(json.loads(RESULTS.read_text()))
    assert len(found) == 5
    for title, table in found.items():
        assert table in page, title


def test_every_record_is_listed_and_follows_the_template() -> None:
    index = (ROOT / "docs" / "adr" / "index.md").read_text()
    for record in sorted((ROOT / "docs" / "adr").glob("0*.md")):
        text = record.read_text()
        number = record.name[:4]
        assert f"[{number}]({record.name})" in index
        assert f"[](){{#adr-{number}}}" in text
        for part in (
            "**Status:**",
            "**Date:**",
            "**Kind:**",
            "## Context",
            "## Decision",
            "## Consequences",
            "## Alternatives considered",
        ):
            assert part in text, f"{record.name} lacks {part}"


# Who commits to the throwaway repository: git and mike refuse to commit without a name.
COMMITTER = {
    "GIT_AUTHOR_NAME": "docs",
    "GIT_AUTHOR_EMAIL": "docs@example.invalid",
    "GIT_COMMITTER_NAME": "docs",
    "GIT_COMMITTER_EMAIL": "docs@example.invalid",
}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True, env={**os.environ, **COMMITTER})


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as the docs workflow publishes it: versions 0.1 and then 0.2 deployed
    by mike into a throwaway repository's gh-pages branch, `latest` moved to 0.2 and
    made the default, then that branch's tree written out as a web server serves it."""
    repo = tmp_path_factory.mktemp("repo")
    for folder in ("docs", "src", "overrides"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "the docs")
    # mike runs `mkdocs` from PATH: this venv's, as the docs workflow's install puts it there.
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, **COMMITTER, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["NO_MKDOCS_2_WARNING"] = "1"
    for command in (["deploy", "0.1"], ["deploy", "--update-aliases", "0.2", "latest"], ["set-default", "latest"]):
        done = subprocess.run([bin_dir / "mike", *command], cwd=repo, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path_factory.mktemp("gh-pages")
    archive = _git(repo, "archive", "--format=tar", "gh-pages").stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    return out


def test_mike_publishes_each_version_and_points_latest_at_the_newest(published: Path) -> None:
    for version in ("0.1", "0.2"):
        assert (published / version / "index.html").is_file()
        assert (published / version / "reference" / "lionmem.protocols.memory" / "index.html").is_file()
        assert (published / version / "adr" / "0092-minimal-memory-store" / "index.html").is_file()
    assert (published / "latest").is_symlink() and (published / "latest").resolve() == (published / "0.2").resolve()
    versions = json.loads((published / "versions.json").read_text(encoding="utf-8"))
    assert [(v["version"], v["aliases"]) for v in versions] == [("0.2", ["latest"]), ("0.1", [])]
    assert 'url=latest/"' in (published / "index.html").read_text(encoding="utf-8")


@pytest.fixture
def served(published: Path) -> Iterator[str]:
    handler = partial(SimpleHTTPRequestHandler, directory=str(published))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_in_headless_chromium(served: str) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by .ci/system-deps"
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    elsewhere: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: None if request.url.startswith(served) else elsewhere.append(request.url))
        # A request the next navigation cancels (net::ERR_ABORTED) is not a broken page.
        page.on(
            "requestfailed",
            lambda request: (
                None
                if request.failure == "net::ERR_ABORTED"
                else errors.append(f"failed: {request.url} ({request.failure})")
            ),
        )

        page.goto(served + "/")
        page.wait_for_url("**/latest/")  # the root redirects to the default alias
        assert "lionmem" in page.title()
        assert page.locator("h1").first.inner_text().rstrip("¶") == "lionmem"
        assert "pip install lionmem" in page.locator("article").inner_text()
        assert page.locator("article img[src$='overview.svg']").count() == 1
        # The version selector, filled from versions.json: this is 0.2, 0.1 is listed.
        page.locator(".md-version__current").wait_for(timeout=15_000)
        assert page.locator(".md-version__current").inner_text().startswith("0.2")  # then its alias
        listed = page.locator(".md-version__link").all_inner_texts()
        assert any(text.startswith("0.2") for text in listed) and any(text.startswith("0.1") for text in listed)
        page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)

        # Three tabs; the repository link; the palette toggle switches the scheme.
        tabs = [text.strip() for text in page.locator(".md-tabs__link").all_inner_texts()]
        assert tabs == ["Guide", "Decisions", "API reference"]
        assert page.locator(".md-header a.md-source").get_attribute("href") == "https://github.com/lionmem/lionmem"
        scheme = page.locator("body").get_attribute("data-md-color-scheme")
        page.locator("form[data-md-component='palette'] label:visible").first.click()
        assert page.locator("body").get_attribute("data-md-color-scheme") not in (None, scheme)

        page.locator(".md-tabs__link", has_text="Decisions").click()
        page.wait_for_url("**/adr/")
        assert page.locator("h1").first.inner_text().rstrip("¶") == "Decision records"

        # The API reference's sidebar: sections by package, each module under a short label.
        page.goto(served + "/latest/reference/lionmem.protocols.memory/")
        assert page.locator("[id='lionmem.protocols.memory.MemoryQuery']").count() == 1
        sidebar = page.locator(".md-sidebar--primary .md-nav--primary")
        tab = sidebar.locator(":scope > ul > li.md-nav__item--active")
        sections = tab.locator(":scope > nav > ul > li > label").all_inner_texts()
        assert [text.strip() for text in sections] == ["lionmem", "protocols", "session", "adapters", "testing"]
        labels = [text.strip() for text in tab.locator("a.md-nav__link").all_inner_texts() if text.strip()]
        assert len(labels) >= 37  # every module page
        assert "memory" in labels and "pile" in labels
        assert not [label for label in labels if label.startswith("lionmem.") or len(label) > 24]

        page.goto(served + "/latest/")
        search = page.locator("input[data-md-component='search-query']")
        search.click()
        search.press_sequentially("MemoryQuery", delay=20)
        results = page.locator(".md-search-result__item")
        results.first.wait_for(timeout=15_000)
        assert "MemoryQuery" in results.first.inner_text()
        browser.close()
    assert errors == []
    assert elsewhere == []


def test_each_diagram_is_what_its_description_draws() -> None:
    """The decision records' diagrams are drawn offline by a script, from descriptions
    kept beside it; a drawing edited by hand, or a description changed without
    drawing again, fails here."""
    spec = importlib.util.spec_from_file_location("draw_diagrams", ROOT / "scripts" / "draw_diagrams.py")
    assert spec is not None and spec.loader is not None
    draw_diagrams = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw_diagrams)
    drawings: dict[str, str] = draw_diagrams.drawings()
    assert drawings, "no diagram is described"
    for name, svg in drawings.items():
        committed = (ROOT / "docs" / "assets" / name).read_text(encoding="utf-8")
        assert committed == svg, f"run scripts/draw_diagrams.py and commit docs/assets/{name}"
        used = [page for page in (ROOT / "docs").rglob("*.md") if f"assets/{name}" in page.read_text(encoding="utf-8")]
        assert used, f"{name} is drawn but no page shows it"


@pytest.mark.parametrize(
    "bench",
    [
        "bench_in_memory",
        "bench_cli_start",
        "bench_sync",
        "bench_recent",
        "bench_namespaces",
        "bench_expiry",
        "bench_operators",
        "bench_recall",
        "bench_recall_pg",
        "bench_hybrid",
        "bench_hybrid_speed",
        "bench_growth",
        "bench_postgres_load",
        "bench_disk",
        "bench_write_parts",
        "bench_langgraph_bridge",
        "bench_langgraph_writes",
    ],
)
def test_the_performance_page_shows_each_committed_benchmark(bench: str) -> None:
    """Each benchmark's table, as its `table` renders its committed results, and its
    chart, if it draws one, as its `chart` draws them."""
    module = importlib.import_module(f"benchmarks.{bench}")
    results = json.loads(module.RESULTS.read_text())
    page = (ROOT / "docs" / "performance.md").read_text()
    assert module.table(results) in page
    if hasattr(module, "CHART"):
        assert module.CHART.read_text(encoding="utf-8") == module.chart(results)
        assert f"assets/{module.CHART.name}" in page


def test_the_recall_page_states_the_models_load_time_as_measured() -> None:
    from benchmarks.bench_cli_start import RESULTS

    loaded = json.loads(RESULTS.read_text())["model load"]["ms"] / 1e3
    page = (ROOT / "docs" / "recall.md").read_text(encoding="utf-8")
    assert f"its first embedding in a process takes {loaded:.2f} s" in page


def test_the_recall_page_states_the_measured_recall_of_postgresql() -> None:
    from benchmarks.bench_recall_pg import RESULTS, recall_table

    table = recall_table(json.loads(RESULTS.read_text()))
    page = (ROOT / "docs" / "recall.md").read_text(encoding="utf-8")
    assert textwrap.indent(table, "    ") in page


def test_the_home_page_compares_only_what_a_benchmark_measured_or_a_test_holds() -> None:
    """The LangGraph table is the committed run's numbers; each lionagi row links to a
    row of the differences page, which its own test holds to a test of both libraries."""
    from benchmarks.bench_langgraph import RESULTS, home_table

    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "```bash\npip install lionmem\n```" in home
    assert "](assets/overview.svg)" in home
    # What lionmem does, before the tables that compare it: recall and hybrid recall too.
    listed = home[: home.index("## Beside the stores it is compared with")]
    assert "](recall.md)" in listed and "[hybrid recall](recall.md#meaning-and-words-together)" in listed
    assert home_table(json.loads(RESULTS.read_text())) in home
    assert "(performance.md#beside-langgraphs-durable-stores-at-100000-items)" in home
    table = home[home.index("| Call | lionagi | lionmem |") :].split("\n\n")[0].splitlines()[2:]
    differences = (ROOT / "docs" / "lionagi-differences.md").read_text(encoding="utf-8")
    assert len(table) >= 4
    for row in table:
        (anchor,) = re.findall(r"\]\[([a-z-]+)\]", row.split(" | ")[0])
        assert f"[](){{#{anchor}}} `{anchor}`" in differences, row


def test_the_performance_page_shows_the_committed_copy_benchmark() -> None:
    from benchmarks.bench_cli_copy import RESULTS, table

    page = (ROOT / "docs" / "performance.md").read_text()
    assert table(json.loads((RESULTS / "copy-1000000.json").read_text())) in page


def test_the_performance_page_shows_the_committed_langgraph_benchmark() -> None:
    from benchmarks.bench_langgraph import CHART, RESULTS, chart, table

    results = json.loads(RESULTS.read_text())
    page = (ROOT / "docs" / "performance.md").read_text()
    assert table(results) in page
    assert CHART.read_text(encoding="utf-8") == chart(results)


class _Links(HTMLParser):
    """The links, sources and ids of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if (value is not None and name in ("href", "src") and tag != "a") or (name == "href" and value is not None):
                self.links.append(value)
            if name in ("id", "name") and value is not None:
                self.ids.add(value)


def _broken_links(site: Path, base: str = "/") -> tuple[list[str], int]:
    """Every internal link or source of the site at `site`, served at the path `base`
    of its host, that names no file of the site, or a fragment that no id of its page
    holds; and how many pages were read."""
    parsed: dict[Path, _Links] = {}

    def page(path: Path) -> _Links:
        if path not in parsed:
            parsed[path] = _Links()
            parsed[path].feed(path.read_text(encoding="utf-8"))
        return parsed[path]

    broken: list[str] = []
    for html in sorted(site.rglob("*.html")):
        url = base + html.relative_to(site).as_posix()
        for link in page(html).links:
            target = urljoin(url, link)
            parts = urlsplit(target)
            if parts.scheme or parts.netloc:
                continue
            if not parts.path.startswith(base):
                broken.append(f"{url}: {link} (outside {base})")
                continue
            file = site / unquote(parts.path).removeprefix(base)
            if file.is_dir():
                file = file / "index.html"
            if not file.exists():
                broken.append(f"{url}: {link} (no {file.relative_to(site)})")
            elif parts.fragment and file.suffix == ".html" and unquote(parts.fragment) not in page(file).ids:
                broken.append(f"{url}: {link} (no #{parts.fragment})")
    return broken, len(parsed)


def test_the_link_checker_finds_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text('<a href="a/">a</a><a href="b/">b</a><a href="a/#here">x</a><a id="top"></a>')
    (tmp_path / "a" / "index.html").write_text('<a href="../#top">up</a><a href="https://example.org/">out</a>')
    (tmp_path / "a" / "up.html").write_text('<a href="/elsewhere/">root</a>')
    assert _broken_links(tmp_path, "/docs/") == (
        [
            "/docs/a/up.html: /elsewhere/ (outside /docs/)",
            "/docs/index.html: b/ (no b)",
            "/docs/index.html: a/#here (no #here)",
        ],
        3,
    )


def test_every_link_of_the_site_resolves_to_a_page_and_anchor(site: Path) -> None:
    """A link checker over the built site, served at the path of its `site_url`. The
    404 page's links are root-absolute, as those of a page served at any path must be,
    so they hold only at that path."""
    broken, pages = _broken_links(site, urlsplit(site_url()).path)
    assert pages > 50
    assert broken == []
