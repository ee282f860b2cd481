"""Running the CLI in the test process, as the console script does."""

from __future__ import annotations

import pytest

from sag_pg.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``sag-pg ARGS`` in this process, through the same entry point as the console script: (exit code, stdout,
    stderr); never a traceback."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    return int(exit_info.value.code or 0), out, err
