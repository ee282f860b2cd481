"""The LLM key extractor on the entity gold set (tests/data/entity_gold.jsonl), beside the offline rules.

    # a local model (see docs/extraction.md, "The LLM extractor on a local model"):
    nice -n 19 /work/llm-venv/bin/python -m llama_cpp.server --model qwen2.5-coder-1.5b-instruct-q4.gguf \
        --model_alias qwen --n_threads 1 --n_threads_batch 1 --n_ctx 4096 --port 8090 &
    SAG_LLM=openai:qwen SAG_LLM_BASE_URL=http://127.0.0.1:8090/v1 SAG_LLM_CONCURRENCY=1 SAG_LLM_TIMEOUT=300 \
    SAG_LLM_MAX_TOKENS=512 PYTHONPATH=. .venv/bin/python benchmarks/llm_extractor.py --per-lang 10,10,5
    ... --per-lang 20,20,10      # extends the same subset: answered sentences come from the cache
    ... --report-only            # the tables from the cache, no model needed

What runs for each sentence is sag-pg's own :class:`~sag_pg.extract.llm_extractor.LLMExtractor` through its
``openai:`` client (:class:`~sag_pg.llm.openai_llm.OpenAILLM`, the SAG_LLM_* settings): with ``--pipeline keys``
(default) the key prompt (extract_keys) with the sentence as the event, as ``benchmarks/entity_gold.py`` gives the
sentence to the rule extractor as one event; with ``--pipeline events`` the event prompt first (extract_events,
the sentence as a chunk), then the key prompt for every event, as ingestion does (without the summary call and
the pre-retrieved reference keys, which are empty on a fresh database).  A heading (``chunk_title``) is given as
the summary (the key prompt's background) or as the chunk's title.  The source's key types are sag-pg's defaults.

The subset is stratified and deterministic: per language, the sentences ordered by the sha256 of their text,
the first N taken; a larger N keeps the smaller subset's sentences, so a run extends the one before.

Answers are kept in ``--cache`` (one JSON line per sentence: the keys, every request's raw answer, its seconds
and tokens), keyed by model, pipeline, structured-output mode, prompt templates and sentence, so an interrupted
run resumes and ``--report-only`` prints the tables without a model.

Printed: per (language, type) precision/recall of the LLM and of the rule extractor on the same sentences
(counted as tests/entity_gold.py counts them), the JSON requests' schema-valid rate (the answer as it stands:
``json.loads`` + the schema; accepted by sag-pg's lenient reading without a repair round; usable after the repair
round), calls, tokens, tokens per second and seconds per sentence, and the load average during the run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import validators

from sag_pg import prompts
from sag_pg.config import Settings
from sag_pg.errors import LLMError
from sag_pg.extract.llm_extractor import LLMExtractor
from sag_pg.extract.rules import RuleExtractor
from sag_pg.llm.base import Usage
from sag_pg.llm.jsonparse import JSONAnswerError, parse_answer
from sag_pg.llm.openai_llm import OpenAILLM
from sag_pg.types import DEFAULT_KEY_TYPES, Chunk, EventDraft, PreRetrieval
from tests.entity_gold import LANGS, TYPES, Counts, GoldSentence, Score, load_gold, score

DEFAULT_CACHE = Path("benchmarks/results/llm_extractor/answers.jsonl")


# -- the subset ------------------------------------------------------------------------------------------------


def subset(gold: list[GoldSentence], per_lang: Mapping[str, int]) -> list[GoldSentence]:
    """Per language, the first ``per_lang[lang]`` sentences in sha256-of-text order (a prefix of every larger
    subset); returned in the gold file's order."""
    picked: set[str] = set()
    for lang in LANGS:
        ordered = sorted((s for s in gold if s.lang == lang), key=lambda s: hashlib.sha256(s.text.encode()).digest())
        picked.update(s.text for s in ordered[: per_lang.get(lang, 0)])
    return [s for s in gold if s.text in picked]


def parse_per_lang(spec: str) -> dict[str, int]:
    """``"10,10,5"`` (zh, en, mixed) or ``"zh=10,en=10,mixed=5"``."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if all("=" in p for p in parts):
        return {k.strip(): int(v) for k, v in (p.split("=", 1) for p in parts)}
    return dict(zip(LANGS, (int(p) for p in parts), strict=False))


# -- recording the requests ------------------------------------------------------------------------------------


@dataclass
class Call:
    purpose: str
    repair: bool  # the repair round of a JSON request
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    answer: str | None  # None: the request failed
    strict_valid: bool = False  # json.loads + the schema, the answer as it stands
    accepted: bool = False  # sag-pg's lenient reading (fences, prose, shape slips) accepts it

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class RecordingLLM(OpenAILLM):
    """sag-pg's OpenAILLM, keeping every request's raw answer, seconds and tokens to judge them afterwards."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[Call] = []

    def _chat(self, messages: list[dict[str, str]], *, json_mode: bool, purpose: str,
              schema: Mapping[str, Any] | None = None) -> str:
        before = self.usage.snapshot()
        started = time.perf_counter()
        answer: str | None = None
        try:
            answer = super()._chat(messages, json_mode=json_mode, purpose=purpose, schema=schema)
            return answer
        finally:
            spent = self.usage.snapshot() - before
            call = Call(purpose, any(m["role"] == "assistant" for m in messages), time.perf_counter() - started,
                        spent.prompt_tokens, spent.completion_tokens, answer)
            if answer is not None and schema is not None:
                call.strict_valid = strictly_valid(answer, schema)
                try:
                    parse_answer(answer, schema)
                    call.accepted = True
                except JSONAnswerError:
                    pass
            self.calls.append(call)


def strictly_valid(answer: str, schema: Mapping[str, Any]) -> bool:
    try:
        value = json.loads(answer)
    except ValueError:
        return False
    return bool(validators.validator_for(schema)(schema).is_valid(value))


# -- running -----------------------------------------------------------------------------------------------------


def templates_digest(prompts_dir: Path | None) -> str:
    texts = [prompts.load(name, prompts_dir) for name in ("extract_keys", "extract_events")]
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()[:12]


def cache_key(model: str, pipeline: str, mode: str, templates: str, sentence: GoldSentence) -> str:
    parts = [model, pipeline, mode, templates, sentence.text, sentence.chunk_title]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def extract_one(extractor: LLMExtractor, sentence: GoldSentence, pipeline: str) -> list[tuple[str, str]]:
    key_types = list(DEFAULT_KEY_TYPES)
    pre = PreRetrieval(direct_keys=[], keys_from_events=[], key_types=key_types)
    if pipeline == "keys":
        events = [EventDraft(title="", content=sentence.text)]
        summary = sentence.chunk_title
    else:
        chunk = Chunk(ordinal=0, title=sentence.chunk_title, content=sentence.text, start_line=1, end_line=1)
        events = extractor.events(chunk, summary="", doc_title=sentence.chunk_title)
        summary = ""
    found: list[tuple[str, str]] = []
    for event in events:
        found.extend((k.type, k.name) for k in extractor.keys(event, summary=summary, pre=pre))
    return list(dict.fromkeys(found))


class ReplayLLM:
    """The answers one sentence got, given back in order: ``--replay`` turns them into keys with the current
    extractor code (its filters), without a model."""

    def __init__(self, name: str, calls: list[dict[str, Any]]) -> None:
        self.name = name
        self.usage = Usage()
        self._answers = [c["answer"] for c in calls if not c["repair"] and c["answer"] is not None]
        self._repairs = {i: c["answer"] for i, c in enumerate(calls) if c["repair"]}

    def complete_json(self, prompt: str, *, schema: Mapping[str, Any], system: str | None = None,
                      purpose: str = "") -> Any:
        answer = self._answers.pop(0)
        try:
            return parse_answer(answer, schema)
        except JSONAnswerError:
            repaired = self._repairs.pop(min(self._repairs)) if self._repairs else None
            if repaired is None:
                raise LLMError("no repaired answer kept") from None
            return parse_answer(repaired, schema)

    def complete_text(self, prompt: str, *, system: str | None = None, purpose: str = "") -> str:
        return str(self._answers.pop(0))


def replay(row: dict[str, Any], sentence: GoldSentence, args: argparse.Namespace) -> list[tuple[str, str]]:
    if row.get("error"):
        return []
    llm = ReplayLLM(row["model"], row["calls"])
    return extract_one(LLMExtractor(llm, prompts_dir=args.prompts_dir), sentence, row["pipeline"])


def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                kept[row["key"]] = row
    return kept


def run(sentences: list[GoldSentence], llm: RecordingLLM, args: argparse.Namespace,
        cache: dict[str, dict[str, Any]], templates: str) -> list[dict[str, Any]]:
    extractor = LLMExtractor(llm, prompts_dir=args.prompts_dir)
    rows = []
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    for n, sentence in enumerate(sentences, 1):
        key = cache_key(llm.name, args.pipeline, args.structured_output, templates, sentence)
        row = cache.get(key)
        if row is None or (args.retry_failed and row.get("error")):
            if args.report_only:
                continue
            llm.calls = []
            started = time.perf_counter()
            error = None
            keys: list[tuple[str, str]] = []
            try:
                keys = extract_one(extractor, sentence, args.pipeline)
            except LLMError as exc:
                error = str(exc)
            row = {"key": key, "model": llm.name, "pipeline": args.pipeline, "mode": args.structured_output,
                   "lang": sentence.lang, "text": sentence.text, "keys": keys, "error": error,
                   "seconds": round(time.perf_counter() - started, 2), "load": os.getloadavg()[0],
                   "used_mode": llm.structured_output, "calls": [c.as_dict() for c in llm.calls]}
            with args.cache.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            cache[key] = row
            shown = "  ".join(f"{t}:{v}" for t, v in keys) or (f"ERROR {error}" if error else "(no keys)")
            print(f"[{n}/{len(sentences)}] {sentence.lang} {row['seconds']:.0f}s load {row['load']:.2f}: "
                  f"{sentence.text[:40]} -> {shown}", flush=True)
        if args.replay:
            row = dict(row, keys=replay(row, sentence, args))
        rows.append(row)
    return rows


# -- the report ----------------------------------------------------------------------------------------------------


def rules_score(sentences: list[GoldSentence]) -> Score:
    rules = RuleExtractor()

    def extract(text: str, chunk_title: str) -> list[tuple[str, str]]:
        return [(k.type, k.name) for k in rules.keys(EventDraft("", text), chunk_title=chunk_title)]

    return score(extract, sentences)


def llm_score(sentences: list[GoldSentence], rows: list[dict[str, Any]]) -> Score:
    by_text = {row["text"]: row for row in rows}

    def extract(text: str, chunk_title: str) -> list[tuple[str, str]]:
        return [(t, n) for t, n in by_text[text]["keys"]]

    return score(extract, [s for s in sentences if s.text in by_text])


def _cell(c: Counts) -> str:
    return f"{c.precision:5.2f} {c.recall:5.2f} {c.tp:3d} {c.fp:3d} {c.fn:3d}"


def side_by_side(llm: Score, rules: Score) -> str:
    lines = ["lang   type          |   LLM  P     R  tp  fp  fn |  rules P     R  tp  fp  fn"]

    def line(lang: str, label: str, a: Counts, b: Counts) -> None:
        lines.append(f"{lang:<6} {label:<13} |      {_cell(a)} |      {_cell(b)}")

    for lang in LANGS:
        if not any(key[0] == lang for key in rules.counts):
            continue
        for key_type in TYPES:
            a, b = llm.counts.get((lang, key_type), Counts()), rules.counts.get((lang, key_type), Counts())
            if a.tp + a.fp + a.fn + b.tp + b.fp + b.fn:
                line(lang, key_type, a, b)
        line(lang, "named (p/o/l)", llm.total([lang]), rules.total([lang]))
    line("all", "named (p/o/l)", llm.total(), rules.total())
    line("all", "all types", llm.total(types=TYPES), rules.total(types=TYPES))
    lines.append(f"forbidden keys produced (not_keys): LLM {len(llm.forbidden)}, rules {len(rules.forbidden)}")
    return "\n".join(lines)


def request_report(rows: list[dict[str, Any]]) -> str:
    calls = [c for row in rows for c in row["calls"]]
    first = [c for c in calls if not c["repair"] and c["answer"] is not None]
    repairs = [c for c in calls if c["repair"]]
    failed = [row for row in rows if row["error"]]
    seconds = sum(c["seconds"] for c in calls)
    prompt_tokens = sum(c["prompt_tokens"] for c in calls)
    completion_tokens = sum(c["completion_tokens"] for c in calls)
    by_purpose: dict[str, list[dict[str, Any]]] = {}
    for c in first:
        by_purpose.setdefault(c["purpose"], []).append(c)
    lines = [
        (f"sentences {len(rows)} (failed {len(failed)}), requests {len(calls)} "
        f"(first answers {len(first)}, repair rounds {len(repairs)}, failed requests "
        f"{sum(c['answer'] is None for c in calls)})"),
        "schema-valid, first answers: "
        + ", ".join(f"{p} {sum(c['strict_valid'] for c in cs)}/{len(cs)} as is, "
                    f"{sum(c['accepted'] for c in cs)}/{len(cs)} accepted without repair"
                    for p, cs in sorted(by_purpose.items()))
        + f"; usable after the repair round: {len(rows) - len(failed)}/{len(rows)} sentences",
        (f"tokens: prompt {prompt_tokens}, completion {completion_tokens}; request seconds {seconds:.0f} "
        f"({seconds / max(1, len(rows)):.1f} s per sentence); {completion_tokens / max(seconds, 1e-9):.2f} "
        f"completion tokens/s, {(prompt_tokens + completion_tokens) / max(seconds, 1e-9):.1f} prompt+completion "
        f"tokens/s (wall time of the requests)"),
    ]
    loads = [row["load"] for row in rows if row.get("load") is not None]
    if loads:
        lines.append(f"1-min load average at the end of each sentence: min {min(loads):.2f}, "
                     f"mean {sum(loads) / len(loads):.2f}, max {max(loads):.2f}")
    modes = sorted({row.get("used_mode", "?") for row in rows})
    lines.append(f"structured output used: {', '.join(modes)}")
    return "\n".join(lines)


_PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) (?:tokens|runs)")


def server_log_report(path: Path) -> str:
    """llama.cpp's own timings (llama_perf_context_print lines of the server's log): prompt reading and writing
    speed, over every request the log holds (llama-cpp-python's server streams no token usage)."""
    totals = {"prompt eval": [0.0, 0, 0], "eval": [0.0, 0, 0]}  # ms, tokens, requests
    for match in _PERF.finditer(path.read_text(encoding="utf-8", errors="replace")):
        entry = totals[match.group(1)]
        entry[0] += float(match.group(2))
        entry[1] += int(match.group(3))
        entry[2] += 1
    (p_ms, p_tok, p_n), (e_ms, e_tok, _) = totals["prompt eval"], totals["eval"]
    return (f"server log {path}: {p_n} requests; prompt {p_tok} tokens read at {p_tok / max(p_ms / 1000, 1e-9):.1f}"
            f" tokens/s ({p_tok / max(p_n, 1):.0f} a request, {p_ms / 1000 / max(p_n, 1):.1f} s); completion "
            f"{e_tok} tokens written at {e_tok / max(e_ms / 1000, 1e-9):.2f} tokens/s "
            f"({e_tok / max(p_n, 1):.0f} a request, {e_ms / 1000 / max(p_n, 1):.1f} s)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-lang", default="10,10,5",
                        help="sentences per language, zh,en,mixed (or zh=10,en=10,mixed=5); 'all' for the set")
    parser.add_argument("--pipeline", choices=["keys", "events"], default="keys",
                        help="keys: the key prompt on the sentence; events: events, then keys of each")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="answers kept between runs (JSON lines)")
    parser.add_argument("--prompts-dir", type=Path, default=None, help="prompt overrides (default: SAG_PROMPTS_DIR)")
    parser.add_argument("--report-only", action="store_true", help="no model: the tables from the cache")
    parser.add_argument("--replay", action="store_true",
                        help="keys from the kept answers through the current extractor code (its filters)")
    parser.add_argument("--retry-failed", action="store_true", help="ask again for sentences that failed")
    parser.add_argument("--errors", action="store_true", help="list the LLM's false positives / negatives")
    parser.add_argument("--server-log", type=Path, default=None,
                        help="llama.cpp server log: its prompt / completion tokens per second")
    parser.add_argument("--keys", action="store_true", help="list the LLM's keys of every sentence")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    spec = (settings.llm or "").strip()
    if not spec.startswith("openai:"):
        raise SystemExit("set SAG_LLM=openai:MODEL (and SAG_LLM_BASE_URL for a local server)")
    args.structured_output = settings.llm_structured_output
    args.prompts_dir = args.prompts_dir or settings.prompts_dir
    gold = load_gold()
    per_lang = {lang: 10**6 for lang in LANGS} if args.per_lang == "all" else parse_per_lang(args.per_lang)
    sentences = subset(gold, per_lang)
    llm = RecordingLLM(spec.split(":", 1)[1], base_url=settings.llm_base_url, api_key=settings.llm_api_key,
                       timeout=settings.llm_timeout, max_retries=settings.llm_max_retries,
                       concurrency=settings.llm_concurrency, max_tokens=settings.llm_max_tokens,
                       structured_output=settings.llm_structured_output)
    cache = load_cache(args.cache)
    templates = templates_digest(args.prompts_dir)
    load_start = os.getloadavg()
    rows = run(sentences, llm, args, cache, templates)
    answered = [s for s in sentences if s.text in {row["text"] for row in rows}]
    print(f"\nmodel {llm.name} at {llm.endpoint}; pipeline {args.pipeline}; SAG_LLM_STRUCTURED_OUTPUT "
          f"{args.structured_output}; max_tokens {settings.llm_max_tokens}; timeout {settings.llm_timeout:g}s")
    print(f"subset: {', '.join(f'{lang} {sum(s.lang == lang for s in answered)}' for lang in LANGS)} "
          f"of {len(sentences)} asked; load average at start {load_start[0]:.2f}, now {os.getloadavg()[0]:.2f}")
    print(request_report(rows))
    if args.server_log is not None:
        print(server_log_report(args.server_log))
    llm_result, rules_result = llm_score(answered, rows), rules_score(answered)
    print(side_by_side(llm_result, rules_result))
    if args.errors:
        for kind, lang, key_type, name, text in llm_result.errors:
            print(f"  {kind} {lang:<5} {key_type:<12} {name:<28} {text}")
        for text, key_type, name in llm_result.forbidden:
            print(f"  forbidden {key_type:<12} {name:<20} {text}")
    if args.keys:
        for row in rows:
            print(row["text"])
            print("    " + ("  ".join(f"{t}:{n}" for t, n in row["keys"]) or f"ERROR {row['error']}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
