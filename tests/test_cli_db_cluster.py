"""`sag-pg db cluster …` without a cluster: help, and the one-line errors before anything is built or started.

The cluster itself (build, start, nodes, rebalance) is tested by the `citus` lane, tests/citus/.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg.cli import cli, main
from sag_pg.db import citus_build

SUBCOMMANDS = ["start", "url", "status", "add-worker", "remove-worker", "stop"]


def test_the_cluster_commands_exist_with_an_example() -> None:
    group = cli.commands["db"].commands["cluster"]  # type: ignore[attr-defined]
    assert sorted(group.commands) == sorted(SUBCOMMANDS)
    for name in ["", *SUBCOMMANDS]:
        result = CliRunner().invoke(cli, ["db", "cluster", *([name] if name else []), "--help"])
        assert result.exit_code == 0, result.output
        assert "Example:" in result.output


def _tarball(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_citus_version_comes_from_the_tarballs_configure(tmp_path: Path) -> None:
    flat = _tarball(tmp_path / "flat.tar.gz", {"configure": "#!/bin/sh\nPACKAGE_VERSION='14.0.1'\n",
                                                "src/configure": "PACKAGE_VERSION='0.0'\n"})
    assert citus_build.citus_version(flat) == "14.0.1"
    nested = _tarball(tmp_path / "nested.tar.gz", {"citus-13.2.0/configure": "x\nPACKAGE_VERSION='13.2.0'\n"})
    assert citus_build.citus_version(nested) == "13.2.0"


def _error(args: list[str], home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["--home", str(home), *args])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_errors_before_a_cluster_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAG_CITUS_SOURCE", raising=False)
    home, cache = tmp_path / "home", tmp_path / "cache"
    assert _error(["db", "cluster", "url"], home, capsys).startswith(
        f"Error: no Citus cluster in {home / 'citus'}; create it with `sag-pg db cluster start")
    assert _error(["db", "cluster", "add-worker"], home, capsys).startswith("Error: no Citus cluster in")
    assert _error(["db", "cluster", "start", "--cache", str(cache)], home, capsys).startswith(
        "Error: Citus is not built yet: give its source tarball with --citus-source or SAG_CITUS_SOURCE")
    junk = _tarball(tmp_path / "junk.tar.gz", {"README": "not citus\n"})
    assert _error(["db", "cluster", "start", "--cache", str(cache), "--citus-source", str(junk)], home,
                  capsys) == f"Error: {junk} is not a Citus source tarball (no configure with a PACKAGE_VERSION " \
                             "at its top)\n"
    assert not (cache / "citus").exists() or not any((cache / "citus").iterdir())
    with pytest.raises(SystemExit) as exit_info:
        main(["--home", str(home), "db", "cluster", "start", "--workers", "1"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["--home", str(home), "db", "cluster", "stop"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == "not running\n"
