"""Deep mode on the demo corpus: LLM calls, tokens and time per question.

    SAG_LLM=openai:gpt-4o-mini SAG_LLM_API_KEY=... .venv/bin/python benchmarks/deep_demo.py
    SAG_LLM=openai:qwen2.5-7b-instruct SAG_LLM_BASE_URL=http://localhost:8000/v1 \\
        .venv/bin/python benchmarks/deep_demo.py --max-rounds 3 --max-llm-calls 30 --trace

The database is SAG_DATABASE_URL, or the embedded server under SAG_HOME. The demo documents go into the
``demo`` source with the offline rule extractor (``--llm-ingest`` extracts with the LLM instead; its
cost is not part of the figures). Without SAG_LLM the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from sag_pg import SAG, Settings
from sag_pg.answer import deep_ask, print_trace
from sag_pg.demo import DEMO_QUERIES, DEMO_SOURCE, demo_paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--max-llm-calls", type=int, default=30)
    parser.add_argument("--top-n", type=int, default=10)
    parser.add_argument("--llm-ingest", action="store_true", help="extract events and keys with the LLM")
    parser.add_argument("--trace", action="store_true", help="print each question's trace")
    parser.add_argument("--json", metavar="FILE", help="also write the figures (and traces) as JSON")
    args = parser.parse_args(argv)

    console = Console()
    settings = Settings.from_env()
    if not settings.llm:
        console.print("deep_demo: no LLM endpoint configured — set SAG_LLM (e.g. openai:gpt-4o-mini) and "
                      "SAG_LLM_BASE_URL / SAG_LLM_API_KEY. Nothing to measure.")
        return 0

    offline = settings if args.llm_ingest else dataclasses.replace(settings, llm=None)
    with SAG(settings=offline) as loader:
        report = loader.ingest_files(demo_paths(), source=DEMO_SOURCE)
    console.print(f"demo corpus: {report.documents} documents ingested, {report.skipped} unchanged; "
                  f"LLM {settings.llm} at {settings.llm_base_url or 'the default endpoint'}")

    table = Table(title=f"deep mode on the demo corpus (max {args.max_rounds} rounds, "
                        f"{args.max_llm_calls} LLM calls); prompt/compl. = tokens; cited = the answer's "
                        "document is cited")
    table.add_column("question", max_width=30, overflow="ellipsis", no_wrap=True)
    for column in ("stopped", "rounds", "nodes", "calls", "requests", "prompt", "compl.", "s", "cited"):
        table.add_column(column, justify="right" if column != "stopped" else "left", no_wrap=True)
    rows: list[dict[str, Any]] = []
    with SAG(settings=settings) as sag:
        for query in DEMO_QUERIES:
            started = time.perf_counter()
            answer = deep_ask(sag, query.question, source=DEMO_SOURCE, top_n=args.top_n,
                              max_rounds=args.max_rounds, max_llm_calls=args.max_llm_calls)
            seconds = time.perf_counter() - started
            trace = answer.trace
            cited = any(c.document_uri.endswith(query.answer_uri_suffix) for c in answer.citations)
            if args.trace:
                print_trace(console, trace)
                console.print(answer.text, highlight=False)
                console.print()
            rows.append({"question": query.question, "hops": query.hops, "stopped": trace.stopped,
                         "rounds": len(trace.rounds), "nodes": len(trace.nodes), "llm_calls": trace.llm_calls,
                         "requests": trace.requests, "prompt_tokens": trace.prompt_tokens,
                         "completion_tokens": trace.completion_tokens, "seconds": round(seconds, 2),
                         "answer_doc_cited": cited, "answer": answer.text, "trace": trace.to_dict()})
            table.add_row(query.question, trace.stopped, str(len(trace.rounds)), str(len(trace.nodes)),
                          str(trace.llm_calls), str(trace.requests), str(trace.prompt_tokens),
                          str(trace.completion_tokens), f"{seconds:.1f}", "yes" if cited else "no")
    console.print(table)
    n = len(rows)
    console.print(f"mean per question: {sum(r['llm_calls'] for r in rows) / n:.1f} LLM calls, "
                  f"{sum(r['prompt_tokens'] for r in rows) / n:,.0f} prompt + "
                  f"{sum(r['completion_tokens'] for r in rows) / n:,.0f} completion tokens, "
                  f"{sum(r['seconds'] for r in rows) / n:.1f} s; answer document cited in "
                  f"{sum(r['answer_doc_cited'] for r in rows)} of {n}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, ensure_ascii=False, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
