"""How question processing scales with the question's length (issue #36 item 4), with figures.

    .venv/bin/python benchmarks/question_scaling.py            # every size of the issue
    .venv/bin/python benchmarks/question_scaling.py --quick    # the smaller sizes only

In a fresh database (``sag_bench_questions_<pid>`` on the configured server), with a few Chinese and English
documents stored (so the Han segmentation has a vocabulary), the seconds of one call of:

* ``expand_question`` with an alias of 8/16/32/64 KB in the source's synonym table, the question holding it;
* ``sag.embed_hash`` of 12.5k/50k/200k characters (one Chinese run; English words);
* ``query_terms`` on 3k/12k/25k Chinese characters.

The work behind ``sag.expand_question`` is timed through its unchecked body (``sag_internal._expand_question``)
where it exists: the public function now refuses a question longer than ``sag_pg.limits.MAX_QUESTION_CHARS`` at
once, which is printed too.  Each figure
is the best of ``--repeat`` runs; the ratio to the previous size shows the growth (2x the size: ~2 linear, ~4
quadratic).  Run it on the code before a change (PYTHONPATH at that checkout) for the "before" figures; a call
over ``--cap`` seconds is cancelled and printed as such.
"""

from __future__ import annotations

import argparse
import os
import time

import psycopg

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import resolve_dsn

HAN = ("曹操与袁绍在官渡展开决战官渡之战中曹操击败袁绍奠定了统一北方的基础诸葛亮辅佐刘备建立蜀汉"
       "北京冬奥会开幕时间是二月四日长江是中国最长的河流")
WORDS = ("Ada Lovelace wrote the first published algorithm for the Analytical Engine of Charles Babbage "
         "in London while Grace Hopper later wrote compilers").split()
DOCS = [("zh-1", "曹操与袁绍在官渡展开决战。官渡之战中曹操击败袁绍，奠定了统一北方的基础。"),
        ("zh-2", "诸葛亮辅佐刘备建立蜀汉。北京冬奥会开幕时间是二月四日。长江是中国最长的河流。"),
        ("en-1", "Ada Lovelace wrote the first published algorithm for the Analytical Engine in 1843."),
        ("en-2", "Grace Hopper wrote the first compiler in 1952 at Remington Rand.")]


def han(n: int) -> str:
    return (HAN * (n // len(HAN) + 1))[:n]


def english(n: int) -> str:
    out, i = [], 0
    while sum(map(len, out)) + len(out) < n:
        out.append(WORDS[i % len(WORDS)] + (str(i // len(WORDS)) if i % 7 == 0 else ""))
        i += 1
    return " ".join(out)[:n]


def timed(conn: psycopg.Connection, sql: str, args: list[object], repeat: int, cap_s: float) -> float | None:
    best: float | None = None
    for _ in range(repeat):
        conn.execute("select set_config('statement_timeout', %s, true)", [str(int(cap_s * 1000))])
        started = time.perf_counter()
        try:
            conn.execute(sql, args).fetchone()
        except psycopg.errors.QueryCanceled:
            conn.rollback()
            return None
        took = time.perf_counter() - started
        best = took if best is None else min(best, took)
        conn.rollback()
    return best


def show(label: str, sizes: list[str], figures: list[float | None], cap_s: float) -> None:
    parts, previous = [], None
    for size, took in zip(sizes, figures, strict=True):
        if took is None:
            parts.append(f"{size}: > {cap_s:.0f} s (cancelled)")
            previous = None
            continue
        ratio = f" (x{took / previous:.1f})" if previous else ""
        parts.append(f"{size}: {took:.3f} s{ratio}")
        previous = took
    print(f"{label:<34} " + "; ".join(parts))


def exists(conn: psycopg.Connection, signature: str) -> bool:
    return conn.execute("select to_regprocedure(%s) is not null", [signature]).fetchone()[0]  # type: ignore[index]


def run(dsn: str, quick: bool, repeat: int, cap_s: float) -> None:
    with SAG(settings=Settings(database_url=dsn)) as sag:
        for uri, text in DOCS:
            sag.ingest_text(text, uri=uri, source="s")
    with psycopg.connect(dsn) as conn:
        internal_expand = exists(conn, "sag_internal._expand_question(text,bigint[])")
        expand = "sag_internal._expand_question" if internal_expand else "sag.expand_question"
        terms = "sag.query_terms"
        print(f"server {conn.info.parameter_status('server_version')}; timing {expand} and {terms}; "
              f"best of {repeat}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

        kbs = [8, 16] if quick else [8, 16, 32, 64]
        figures = []
        for kb in kbs:
            alias = english(kb * 1024)
            conn.execute("update sag.sources set config = jsonb_set(config, '{synonyms}', %s::jsonb) where name = 's'",
                         [psycopg.types.json.Jsonb({alias: "Brightwater Robotics", "BWR": "Brightwater Robotics"})])
            conn.commit()
            figures.append(timed(conn, f"select {expand}(%s, null)", [f"Where is {alias} based?"], repeat, cap_s))
        show(f"{expand} (alias)", [f"{kb} KB" for kb in kbs], figures, cap_s)

        sizes = [12_500, 50_000] if quick else [12_500, 50_000, 200_000]
        show("sag.embed_hash (Chinese run)", [f"{n // 1000}k" if n % 1000 == 0 else f"{n / 1000:.1f}k" for n in sizes],
             [timed(conn, "select sag.embed_hash(%s, 512)", [han(n)], repeat, cap_s) for n in sizes], cap_s)
        show("sag.embed_hash (English words)", [f"{n / 1000:g}k" for n in sizes],
             [timed(conn, "select sag.embed_hash(%s, 512)", [english(n)], repeat, cap_s) for n in sizes], cap_s)

        sizes = [3_000, 12_000] if quick else [3_000, 12_000, 25_000]
        show(f"{terms} (Chinese)", [f"{n // 1000}k" for n in sizes],
             [timed(conn, f"select {terms}(%s, null)", [han(n)], repeat, cap_s) for n in sizes], cap_s)
        show(f"{terms} (English)", [f"{n // 1000}k" for n in sizes],
             [timed(conn, f"select {terms}(%s, null)", [english(n)], repeat, cap_s) for n in sizes], cap_s)

        if internal_expand:  # the public functions refuse a long question first
            for public in ("sag.expand_question",):
                started = time.perf_counter()
                try:
                    conn.execute(f"select {public}(%s, null)", [han(121_000)])
                    outcome = "accepted"
                except psycopg.errors.InvalidParameterValue as exc:
                    outcome = f"refused: {exc.diag.message_primary}"
                conn.rollback()
                print(f"{public} of 121k characters: {outcome} ({time.perf_counter() - started:.3f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the two smaller sizes of each")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cap", type=float, default=120.0, help="cancel a call after this many seconds")
    args = parser.parse_args()
    with temporary_database(resolve_dsn(Settings.from_env()), "questions") as dsn:
        run(dsn, args.quick, args.repeat, args.cap)


if __name__ == "__main__":
    main()
