"""The drivers, imported before anything else of the store, so that their absence
names the extra that brings them rather than the module Python could not find."""


def _require() -> None:
    try:
        import psycopg  # noqa: F401  # pyright: ignore[reportUnusedImport]
        import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f'the PostgreSQL store needs {exc.name}: pip install "lionmem[postgres]"', name=exc.name
        ) from exc


_require()
