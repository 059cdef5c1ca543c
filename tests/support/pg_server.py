"""A throwaway PostgreSQL server for tests and benchmarks, from the local binaries:
Debian's (with `pg_trgm`) for most tests, or those of the `pgserver` wheel the test
extra installs (PostgreSQL 16 with pgvector, no `pg_trgm`) for recall.

`initdb` refuses to run as root, so as root the server runs as the `postgres` user
that Debian's package creates. The server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

ENV_URL = "LIONMEM_TEST_POSTGRES_URL"


def bindir() -> Path:
    """The directory of the PostgreSQL server binaries this machine has."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not candidates:
        raise RuntimeError(
            "no PostgreSQL server binaries: install Debian's postgresql package "
            f"(bash .ci/system-deps) or set {ENV_URL}"
        )
    return Path(candidates[-1]).parent


def pgvector_bindir() -> Path:
    """The binaries of the `pgserver` wheel: PostgreSQL 16 with pgvector."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        raise RuntimeError("no pgserver package, which brings pgvector: pip install -e '.[test]'")
    return Path(spec.origin).parent / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """One PostgreSQL cluster in a temporary directory."""

    def __init__(self, binaries: Path | None = None) -> None:
        self.bindir = binaries or bindir()
        self.root = Path(tempfile.mkdtemp(prefix="lionmem-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "lionmem"
        self.password = "s3cret-pw"
        self._as: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        try:
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                self.user,
                "--auth=scram-sha-256",
                f"--pwfile={self._pwfile()}",
                "-E",
                "UTF8",
                "--no-sync",
            )
        except BaseException:
            self.remove()  # nothing of a server that never was is left behind
            raise

    def _pwfile(self) -> Path:
        path = self.root / "pw"
        path.write_text(self.password + "\n")
        if self._as:
            owner = pwd.getpwnam("postgres")
            os.chown(path, owner.pw_uid, owner.pw_gid)
        return path

    def _run(self, tool: str, *args: str) -> None:
        """Run one of the server's tools; a failure raises `RuntimeError` with what
        the tool said, which `CalledProcessError` alone does not show."""
        done = subprocess.run(
            [*self._as, str(self.bindir / tool), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed with status {done.returncode}: {done.stderr.strip()}")

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "-t", "60", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def _processes(self) -> list[int]:
        """The postmaster's pid and those of every process it started."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rpartition(")")[2].split()
            except OSError:  # the process ended while this read
                continue
            if int(fields[1]) == postmaster:
                found.append(int(stat.parent.name))
        return found

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP): it keeps its connections open
        and answers nothing, as a host that hangs does."""
        for pid in self._processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Let every process of the server go on (SIGCONT)."""
        for pid in self._processes():
            os.kill(pid, signal.SIGCONT)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The server frozen for the block, and going on again after it."""
        self.freeze()
        try:
            yield
        finally:
            self.thaw()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def running_server(binaries: Path | None = None) -> Iterator[Server]:
    server = Server(binaries)
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop("immediate")
        finally:
            server.remove()


@contextmanager
def postgres_url() -> Iterator[str]:
    """The URL of the server the tests use: the environment's, or a throwaway one."""
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    with running_server() as server:
        yield server.url


def has_pgvector(url: str) -> bool:
    """Whether the server at `url` can install the `vector` extension."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT FROM pg_available_extensions WHERE name = 'vector'").fetchone() is not None


@contextmanager
def wheel_binaries(*, without_pgvector: bool = False) -> Iterator[Path]:
    """The `pgserver` wheel's server binaries, where the user the server runs as can
    run them: in place, or as root a copy in a folder the `postgres` user may read,
    since the virtual environment may sit in one it may not (a `mktemp -d` folder).
    `without_pgvector` copies them without pgvector's files."""
    installed = pgvector_bindir().parent
    if os.geteuid() != 0 and not without_pgvector:
        yield installed / "bin"
        return
    folder = Path(tempfile.mkdtemp(prefix="lionmem-pgbin-"))
    try:
        copy = folder / "pgserver" / "pginstall"
        shutil.copytree(installed, copy, ignore=shutil.ignore_patterns("vector*") if without_pgvector else None)
        # The binaries find the wheel's shared libraries three folders up.
        shutil.copytree(installed.parent.parent / "pgserver.libs", folder / "pgserver.libs")
        os.chmod(folder, 0o755)
        yield copy / "bin"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def pgvector_url() -> Iterator[str]:
    """The URL of a server with pgvector: the environment's, when it has it, or a
    throwaway one from the `pgserver` wheel."""
    if os.environ.get(ENV_URL) and has_pgvector(os.environ[ENV_URL]):
        yield os.environ[ENV_URL]
        return
    with wheel_binaries() as binaries, running_server(binaries) as server:
        yield server.url


@contextmanager
def server_without_pgvector() -> Iterator[Server]:
    """A throwaway server from a copy of the `pgserver` binaries without pgvector's
    files: a server where the `vector` extension is not available at all."""
    with wheel_binaries(without_pgvector=True) as binaries, running_server(binaries) as server:
        yield server


def fresh_database(url: str, encoding: str | None = None) -> str:
    """Create an empty database on the server at `url` and return its URL; in
    `encoding` (with the C locale, which suits any) instead of the server's UTF8."""
    name = f"db_{uuid.uuid4().hex[:12]}"
    options = "" if encoding is None else f" ENCODING '{encoding}' LOCALE 'C' TEMPLATE template0"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}{options}")
    return url.rsplit("/", 1)[0] + "/" + name


def lionmem_tables(url: str) -> list[str]:
    """The lionmem tables in the database at `url`."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'lionmem%' ORDER BY 1").fetchall()
    return [name for (name,) in rows]
