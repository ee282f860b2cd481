"""Issue #37.7: the README's psql examples run right after its quick start (`sag-pg demo`), in order, on a
fresh database — each statement of the ```sql block, as an analyst would paste it."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
from click.testing import CliRunner

from sag_pg.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def _psql_examples() -> list[str]:
    text = README.read_text("utf-8")
    section = text[text.index("### From psql"):]
    block = re.search(r"```sql\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    statements = []
    for line in block.group(1).splitlines():
        code = line.split("--")[0].strip()
        if code and not code.startswith("\\"):  # psql's own commands (\dt, \df) are not SQL
            statements.append(code.rstrip(";"))
    return statements


def test_the_psql_examples_run_after_the_quick_start(demo_dsn: str, tmp_path: Path) -> None:
    # conftest's demo_dsn holds what `sag-pg demo` ingests (the demo finds it unchanged); then the demo itself.
    demo = CliRunner().invoke(cli, ["demo"], env={"SAG_DATABASE_URL": demo_dsn, "SAG_HOME": str(tmp_path),
                                                  "SAG_LLM": "", "SAG_EMBEDDER": ""}, catch_exceptions=False)
    assert demo.exit_code == 0, demo.output
    assert "demo: 0 documents ingested, 12 unchanged" in demo.output
    statements = _psql_examples()
    assert len(statements) >= 4
    with psycopg.connect(demo_dsn, autocommit=True) as conn:  # a plain session, as psql opens
        for statement in statements:
            rows = conn.execute(statement).fetchall()  # type: ignore[arg-type]
            assert rows, statement
        search = conn.execute(statements[0]).fetchall()  # type: ignore[arg-type]
        assert search[0][0].endswith("tech-company/pixar.md")
