"""`sag-pg db …` end to end, in subprocesses as a user would run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sag_pg.db import embedded, migrate

from .server_homes import server_home


def _run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sag_pg", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def home_env():  # type: ignore[no-untyped-def]
    """The offline defaults with a SAG_HOME out of pytest's tmp_path (tests/server_homes.py: the initdb race)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    with server_home("cli-db") as home:
        env["SAG_HOME"] = str(home / "home")
        yield env
        embedded.stop_server(home / "home")


def _psql() -> str:
    return str(embedded.bin_dir() / "psql")


def test_upgrade_status_url_and_psql_on_the_embedded_default(home_env: dict[str, str]) -> None:
    up = _run(["db", "upgrade"], home_env)
    assert up.returncode == 0, up.stderr
    status = _run(["db", "status"], home_env)
    assert status.returncode == 0, status.stderr
    assert "PostgreSQL  18." in status.stdout
    assert "pgvector    0.8." in status.stdout
    assert f"revision {migrate.head_revision()} (current" in status.stdout
    url = _run(["db", "url"], home_env).stdout.strip()
    tables = subprocess.run([_psql(), url, "-Atc", r"\dt sag.*"], capture_output=True, text=True, check=True).stdout
    for table in ("sources", "documents", "chunks", "events", "keys", "event_keys", "chunk_keys"):
        assert f"|{table}|" in tables
    extensions = subprocess.run([_psql(), url, "-Atc", r"\dx"], capture_output=True, text=True, check=True).stdout
    assert "vector|0.8" in extensions


def test_two_status_commands_started_together_with_the_server_stopped(home_env: dict[str, str]) -> None:
    assert not embedded.is_running(Path(home_env["SAG_HOME"]))
    procs = [subprocess.Popen([sys.executable, "-m", "sag_pg", "db", "status", "--json"], env=home_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=180) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, err
        assert json.loads(out)["server_version"].startswith("18.")
    stop = _run(["db", "stop"], home_env)
    assert stop.stdout.strip() == "stopped"
    assert not embedded.is_running(Path(home_env["SAG_HOME"]))


def test_database_url_points_at_another_server(home_env: dict[str, str]) -> None:
    with server_home("cli-db-other") as other_home:
        _points_at(home_env, other_home)


def _points_at(home_env: dict[str, str], other_home: Path) -> None:
    other_url = embedded.ensure_server(other_home)
    try:
        env = dict(home_env, SAG_DATABASE_URL=other_url)
        up = _run(["db", "upgrade"], env)
        assert up.returncode == 0, up.stderr
        info = json.loads(_run(["db", "status", "--json"], env).stdout)
        assert info["location"] == "external"
        assert info["schema_state"] == "current"
        assert not (Path(home_env["SAG_HOME"]) / "pgdata").exists(), "the embedded default must not start"
        marker = subprocess.run([_psql(), other_url, "-Atc", "select count(*) from sag.alembic_version"],
                                capture_output=True, text=True, check=True).stdout.strip()
        assert marker == "1"
        refused = _run(["db", "stop"], env)
        assert refused.returncode != 0 and "external" in refused.stderr
    finally:
        embedded.stop_server(other_home)


def test_unreachable_database_is_one_clear_line(home_env: dict[str, str]) -> None:
    env = dict(home_env, SAG_DATABASE_URL="postgresql://nobody:secret@127.0.0.1:1/none")
    result = _run(["db", "status"], env)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot connect to postgresql://nobody:***@127.0.0.1:1/none")
    assert "secret" not in result.stderr
    assert "Traceback" not in result.stderr
