"""A model server started for one benchmark run: a free localhost port, wait until it answers, stop it after."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_server(command: Callable[[int], Sequence[str]], ready_path: str, *, log: Path | None = None,
                 threads: int = 1, start_timeout: float = 180.0) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run ``command(port)`` with OMP_NUM_THREADS=``threads``; yields (``http://127.0.0.1:PORT``, process) once
    ``GET ready_path`` answers. The output goes to ``log`` (or nowhere)."""
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(list(command(port)), env=env, stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]  # the child has its own copy
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with urllib.request.urlopen(base + ready_path, timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{command(port)[:3]} did not start" + (f"; see {log}" if log else "")) from None
                time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
