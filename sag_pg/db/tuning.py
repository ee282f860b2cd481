"""Server settings for the embedded PostgreSQL, sized from this machine's memory.

initdb's defaults fit a server on a tiny machine: 128 MB of shared buffers, 64 MB for index builds and a
checkpoint every 1 GB of WAL.  sag-pg's work is bulk ingestion (a checkpoint every few seconds at 1 GB)
and HNSW builds and searches over gigabytes of vectors (pgvector builds many times faster when the graph
fits in maintenance_work_mem).  The embedded server is sag-pg's own, so it gets settings for that work,
kept modest because it shares the machine with the user's programs.  An external server
(``SAG_DATABASE_URL``) is never touched: its operator tunes it.

A setting the user has set with ``ALTER SYSTEM`` (or in postgresql.auto.conf) is theirs and is left alone.
"""

from __future__ import annotations

import os

import psycopg
from psycopg import sql

__all__ = ["apply", "desired_settings", "ram_bytes"]

_MB = 1 << 20
_GB = 1 << 30


def ram_bytes() -> int:
    """This machine's physical memory in bytes (8 GB where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: assume a small machine
        return 8 * _GB


def _clamp(value: float, low: int, high: int) -> int:
    return int(min(max(value, low), high))


def desired_settings(ram: int | None = None) -> dict[str, str]:
    """The settings for a machine with ``ram`` bytes of memory (default: this one), as ALTER SYSTEM values.

    * shared_buffers: RAM / 8 (the usual advice is a quarter for a dedicated server; this one is not), between
      128 MB and 4 GB: HNSW searches touch hundreds of index pages, which should not come from the OS cache.
    * effective_cache_size: RAM / 2, what the planner may assume the OS caches.
    * maintenance_work_mem: RAM / 16, between 64 MB and 2 GB: HNSW and GIN builds.
    * max_wal_size 4 GB: a bulk ingest otherwise checkpoints (and writes full pages again) every few seconds.
    """
    ram = ram_bytes() if ram is None else ram
    return {
        "shared_buffers": f"{_clamp(ram / 8, 128 * _MB, 4 * _GB) // _MB}MB",
        "effective_cache_size": f"{_clamp(ram / 2, 512 * _MB, 64 * _GB) // _MB}MB",
        "maintenance_work_mem": f"{_clamp(ram / 16, 64 * _MB, 2 * _GB) // _MB}MB",
        "max_wal_size": "4GB",
    }


def apply(uri: str, settings: dict[str, str] | None = None) -> bool:
    """Write the settings the user has not set themselves with ALTER SYSTEM and reload the configuration.

    Returns True when a setting that only a restart applies (shared_buffers) was written: the caller
    restarts the server if nobody else can be using it.
    """
    wanted = desired_settings() if settings is None else settings
    restart = False
    with psycopg.connect(uri, autocommit=True) as conn:
        rows = conn.execute(
            "select name, coalesce(sourcefile, ''), context from pg_settings where name = any(%s)",
            [list(wanted)]).fetchall()
        for name, sourcefile, context in rows:
            if sourcefile.endswith("postgresql.auto.conf"):
                continue  # set with ALTER SYSTEM: by the user, or by us on an earlier start
            # ALTER SYSTEM takes no parameters; the names are ours and the values are quoted literals.
            conn.execute(sql.SQL("alter system set {} = {}").format(
                sql.Identifier(name), sql.Literal(wanted[name])))
            restart = restart or context == "postmaster"
        conn.execute("select pg_reload_conf()")
    return restart
