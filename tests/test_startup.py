"""`sag-pg --version`, `--help`, `sources` and `stats` start without the heavy imports (issue #20: importing
openai cost 2.3 s of a 4.4 s start). Behaviour, not timing: which modules a fresh interpreter loads."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("openai", "alembic", "sqlalchemy", "torch", "sentence_transformers", "jieba", "sumy", "networkx")

_PROBE = """
import json, sys
from sag_pg.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})))
"""


def _loaded(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=set(HEAVY)), *args], capture_output=True,
                          text=True, timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "SAG_LLM": ""})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_version_and_help_import_nothing_heavy() -> None:
    assert _loaded("--version") == []
    assert _loaded("--help") == []
    assert _loaded("search", "--help") == []


def test_sources_and_stats_do_not_import_openai_or_alembic(db_dsn: str) -> None:
    assert _loaded("--dsn", db_dsn, "sources") == []
    assert _loaded("--dsn", db_dsn, "stats") == []
