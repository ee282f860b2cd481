"""The scale benchmark, as `sag-pg bench-scale` (same options; the server from SAG_DATABASE_URL or SAG_HOME).

    .venv/bin/python benchmarks/scale.py --events 10000,100000
    .venv/bin/python benchmarks/scale.py --events 1000000 --json > scale-1m.json
"""

from __future__ import annotations

import sys

from sag_pg.cli._common import run_main
from sag_pg.cli.bench import bench_scale

if __name__ == "__main__":
    sys.exit(run_main(bench_scale, sys.argv[1:]))  # type: ignore[arg-type]
