"""The embedded server's own settings: applied when sag-pg starts it, never over the user's ALTER SYSTEM."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

from sag_pg.db import embedded, tuning

from .server_homes import server_home


def _settings(uri: str) -> dict[str, tuple[int, str, bool]]:
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "select name, pg_size_bytes(current_setting(name)), coalesce(sourcefile, ''), pending_restart"
            "  from pg_settings where name in ('shared_buffers', 'max_wal_size', 'maintenance_work_mem')").fetchall()
    return {name: (size, source, pending) for name, size, source, pending in rows}


def _start_time(uri: str) -> str:
    with psycopg.connect(uri) as conn:
        return str(conn.execute("select pg_postmaster_start_time()").fetchone()[0])


def test_desired_settings_scale_with_memory_within_bounds() -> None:
    small = tuning.desired_settings(ram=512 << 20)
    assert small["shared_buffers"] == "128MB"          # never below initdb's default
    assert small["maintenance_work_mem"] == "64MB"
    mid = tuning.desired_settings(ram=16 << 30)
    assert mid["shared_buffers"] == "2048MB"            # an eighth of 16 GB
    assert mid["maintenance_work_mem"] == "1024MB"
    assert mid["effective_cache_size"] == "8192MB"
    big = tuning.desired_settings(ram=256 << 30)
    assert big["shared_buffers"] == "4096MB"            # capped: the machine is shared with the user's programs
    assert big["maintenance_work_mem"] == "2048MB"
    assert big["max_wal_size"] == "4GB"


def test_a_fresh_embedded_server_runs_with_the_settings_and_keeps_the_users_own() -> None:
    with server_home("tuning") as parent:
        _settings_survive(parent / "home")


def _settings_survive(home: Path) -> None:
    try:
        uri = embedded.ensure_server(home)
        got = _settings(uri)
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        if ram >= 2 << 30:
            assert got["shared_buffers"][0] > 128 << 20, "shared_buffers still at initdb's default"
        assert got["max_wal_size"][0] == 4 << 30
        for name, (_, source, pending) in got.items():
            assert source.endswith("postgresql.auto.conf"), name
            assert not pending, f"{name} written but not applied (no restart)"

        # Already running: used as it is, not restarted.
        started = _start_time(uri)
        assert _start_time(embedded.ensure_server(home)) == started

        # The user's own value survives the next start.
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("alter system set shared_buffers = '200MB'")
        assert embedded.stop_server(home)
        uri = embedded.ensure_server(home)
        assert _settings(uri)["shared_buffers"][0] == 200 << 20
    finally:
        embedded.stop_server(home)
