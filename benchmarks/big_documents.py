"""Big documents: speed per phase and peak memory of one large document, offline defaults (issue #36 item 11).

    .venv/bin/python benchmarks/big_documents.py                       # en + zh, 256 KB, 1 MB, 4 MB
    .venv/bin/python benchmarks/big_documents.py --sizes 1M --langs en --json results.json

Each case is one synthetic document (English or Chinese prose, generated deterministically: seeded names,
places, organisations, years and numbers in sentences of a few dozen templates, paragraphs and chapter
headings, so chunking, the rule extractor and key resolution see realistic, mostly distinct keys), ingested
into a fresh database (``sag_bench_bigdoc_<pid>`` on the configured server, as ``sag-pg bench`` does) with
the hash embedder and the rule extractor, exactly as ``sag-pg ingest FILE.md`` would.

Every case runs in a child process; this process samples, every 20 ms while it runs:
  * the child's resident set (``VmRSS``): peak client memory, and the peak above the child's own baseline
    after its imports and before it reads the document;
  * the private memory (``RssAnon``: what a backend allocated itself, not the shared buffers it touched) of
    every backend connected to the case's database, summed: peak server memory.
Its CPU seconds (client, and all backends of the database) are read from ``/proc/PID/stat`` too: on a shared
machine the wall time depends on the load, the CPU time much less.
Printed per case: KB/s and seconds of each phase — read (reading the file), prepare (chunking and
tokenising), extract (summary, events, keys), embed (chunks, events, keys), store (the main process waiting
on the database: key resolution and the SQL that writes the document) — end to end, seconds and MB of memory
per MB of text, and chunks, events, keys and keys per event.  The load average is printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SIZES = {"256K": 256_000, "1M": 1_000_000, "4M": 4_000_000}


def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(sep))

# -- deterministic prose ---------------------------------------------------------------------------------

_EN_FIRST = _words("Ada Alan Grace John Claude Barbara Edsger Donald Margaret Katherine Dennis Ken Linus Tim Vint Radia "
             "Frances Leslie Niklaus Tony Robin Judea Shafi Silvio Whitfield Martin Butler Ivan Doug Fernando "
             "Hedy Mary Evelyn Jean Kathleen Betty Marlyn Ruth Sophie Lynn Adele Anita Cynthia Dana Erna "
             "Gertrude Hilda Irene Joan Karen Lois Mildred Nancy Olga Pearl Rosalind Susan Thelma Ursula")
_EN_LAST = _words("Lovelace Turing Hopper Neumann Shannon Liskov Dijkstra Knuth Hamilton Johnson Ritchie Thompson Torvalds "
            "Berners-Lee Cerf Perlman Allen Lamport Wirth Hoare Milner Pearl Goldwasser Micali Diffie Hellman "
            "Lampson Sutherland Engelbart Corbato Lamarr Keller Clarke Bartik Booth Holberton Teitelbaum Wilson "
            "Conway Goldberg Borg Estrin Fletcher Horton Kaplan Jones Spence Tarjan Valiant Yao Rabin Scott "
            "Hartmanis Stearns Blum Karp Cook Levin Floyd Backus Naur McCarthy Minsky Newell Simon")
_EN_PLACES = _words("London Princeton Cambridge Boston Zurich Geneva Vienna Prague Kyoto Osaka Seoul Lisbon Oslo "
              "Helsinki Dublin Edinburgh Manchester Toronto Montreal Vancouver Chicago Denver Austin Seattle "
              "Portland Berlin Munich Hamburg Lyon Marseille Turin Milan Naples Madrid Seville Athens Cairo "
              "Nairobi Lagos Accra Mumbai Delhi Chennai Singapore Jakarta Manila Sydney Melbourne Auckland")
_EN_ORG_HEAD = _words("Northern Royal Atlantic Pacific Central Eastern Western Federal National Coastal Highland "
                "Riverside Lakeside Union Imperial Modern Applied Open Quantum Polar")
_EN_ORG_TAIL = _words("Institute Society Laboratory Foundation Company Observatory Academy Council Museum Library "
                "Railway Bank Press Works Trust")
_EN_THINGS = _words("the analytical engine|a new compiler|the telegraph network|a survey of the coast|the first "
              "weather model|a treaty on fishing rights|the harbour bridge|a vaccine trial|the census of the "
              "province|a steam turbine|the public library|a map of the river delta|the night train|a water "
              "filter|the radio telescope|an atlas of stars|the copper mine|a textile mill|the canal locks|"
              "a school of navigation", "|")
_EN_TEMPLATES = (
    "In {year}, {person} moved to {place} to work for the {org}.",
    "{person} met {person2} in {place} in {year}, and the two began to work on {thing}.",
    "The {org} paid {number} pounds for {thing}, which {person} had proposed in {year}.",
    "According to the records of the {org}, {person} wrote {number} letters to {person2} about {thing}.",
    "{person} later described {thing} as the most difficult project of the decade.",
    "By {year} the {org} in {place} employed {number} people, most of them recruited by {person}.",
    "Critics in {place} argued that {thing} would never pay for itself, but {person2} disagreed.",
    "When {person} returned from {place}, the {org} asked her to lead the work on {thing}.",
    "The committee, chaired by {person2}, met {number} times between {year} and {year2}.",
    "A report published in {year2} credited {person} and {person2} with the design of {thing}.",
    "Most of the money came from {place}, where the {org} had opened an office in {year}.",
    "{person2} never visited {place} again after the dispute of {year}.",
    "Students of the {org} still read the notes {person} left on {thing}.",
    "The costs rose to {number} thousand pounds, twice what the {org} had planned in {year}.",
    "In the spring of {year2}, floods in {place} delayed {thing} by several months.",
)
_EN_HEADINGS = _words("Early years|The move to {place}|Work at the {org}|The {year} expedition|Letters and "
                "disputes|Later life|Legacy of {person}|The archive in {place}", "|")

_ZH_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
_ZH_GIVEN = "伟芳娜秀英敏静丽强磊军洋勇艳杰娟涛明超秀兰霞平刚桂英华建国志文玉兰凤红梅海燕春晓东雪松云飞鹏"
_ZH_PLACES = _words("北京 上海 广州 深圳 杭州 南京 苏州 成都 重庆 武汉 西安 长沙 郑州 济南 青岛 大连 沈阳 哈尔滨 长春 "
              "昆明 贵阳 南宁 福州 厦门 合肥 南昌 太原 石家庄 兰州 银川 西宁 乌鲁木齐 拉萨 呼和浩特 海口 "
              "宁波 温州 无锡 常州 扬州 徐州 洛阳 开封 桂林 泉州 珠海 汕头 佛山 东莞")
_ZH_ORG_HEAD = _words("华夏 东方 长江 黄河 南方 北方 中原 新华 光明 远大 恒通 金桥 天成 海川 星辰 明德 博文 致远")
_ZH_ORG_TAIL = _words("研究所 公司 银行 大学 医院 出版社 学会 基金会 实验室 博物馆 图书馆 铁路局 电力公司 造船厂")
_ZH_THINGS = _words("新的水利工程 跨江大桥 城市地铁线路 气象观测网 乡村小学 港口扩建项目 疫苗试验 人口普查 "
              "高速铁路 风力发电站 古籍整理工作 海岸测绘 粮食仓储系统 天文望远镜 纺织工厂 铜矿开采")
_ZH_TEMPLATES = (
    "{year}年，{person}来到{place}，进入{org}工作。",
    "{year}年，{person}在{place}结识了{person2}，两人开始合作推进{thing}。",
    "{org}为{thing}投入了{number}万元，这个项目最早由{person}在{year}年提出。",
    "据{org}的档案记载，{person}曾就{thing}给{person2}写过{number}封信。",
    "{person}后来说，{thing}是那十年里最困难的工作。",
    "到{year}年，{org}在{place}已有{number}名员工，其中大多数是{person}招进来的。",
    "{place}的一些专家认为{thing}无法收回成本，但{person2}并不同意。",
    "{person}从{place}回来以后，{org}请他主持{thing}。",
    "由{person2}主持的委员会在{year}年到{year2}年之间开了{number}次会议。",
    "{year2}年发表的一份报告认为，{thing}的设计主要归功于{person}和{person2}。",
    "大部分资金来自{place}，{org}在{year}年就在那里设立了办事处。",
    "{year}年的争论之后，{person2}再也没有去过{place}。",
    "{org}的学生至今还在阅读{person}留下的关于{thing}的笔记。",
    "{year2}年春天，{place}发生洪水，{thing}因此推迟了好几个月。",
)
_ZH_HEADINGS = _words("早年经历|迁居{place}|在{org}的工作|{year}年的考察|书信与争论|晚年生活|{person}的遗产|{place}的档案", "|")


def _en_fill(rng: random.Random, template: str) -> str:
    year = rng.randint(1820, 1990)
    return template.format(
        person=f"{rng.choice(_EN_FIRST)} {rng.choice(_EN_LAST)}", person2=f"{rng.choice(_EN_FIRST)} {rng.choice(_EN_LAST)}",
        place=rng.choice(_EN_PLACES), org=f"{rng.choice(_EN_ORG_HEAD)} {rng.choice(_EN_PLACES)} {rng.choice(_EN_ORG_TAIL)}",
        thing=rng.choice(_EN_THINGS), year=year, year2=year + rng.randint(1, 30), number=rng.randint(2, 900))


def _zh_fill(rng: random.Random, template: str) -> str:
    def person() -> str:
        return rng.choice(_ZH_SURNAMES) + "".join(rng.choice(_ZH_GIVEN) for _ in range(rng.randint(1, 2)))
    year = rng.randint(1900, 2020)
    return template.format(
        person=person(), person2=person(), place=rng.choice(_ZH_PLACES),
        org=f"{rng.choice(_ZH_PLACES)}{rng.choice(_ZH_ORG_HEAD)}{rng.choice(_ZH_ORG_TAIL)}",
        thing=rng.choice(_ZH_THINGS), year=year, year2=year + rng.randint(1, 30), number=rng.randint(2, 900))


def synthetic_document(lang: str, size: int, seed: int = 36) -> str:
    """``size`` bytes (UTF-8, cut at a paragraph end, never over) of prose in ``lang`` ('en' or 'zh'),
    the same text for the same arguments."""
    if lang not in ("en", "zh"):
        raise ValueError(f"unknown language {lang!r}")
    rng = random.Random(f"{lang}-{seed}")
    fill, templates, headings = ((_en_fill, _EN_TEMPLATES, _EN_HEADINGS) if lang == "en"
                                 else (_zh_fill, _ZH_TEMPLATES, _ZH_HEADINGS))
    sep = " " if lang == "en" else ""
    title = "A history of the works" if lang == "en" else "工程史"
    parts = [f"# {title}\n\n"]
    total = len(parts[0].encode())
    paragraph = 0
    while True:
        if paragraph % 24 == 0:
            block = "## " + fill(rng, rng.choice(headings)) + "\n\n"
        else:
            block = sep.join(fill(rng, rng.choice(templates)) for _ in range(rng.randint(3, 8))) + "\n\n"
        paragraph += 1
        size_of = len(block.encode())
        if total + size_of > size:
            break
        parts.append(block)
        total += size_of
    return "".join(parts)


# -- measuring -------------------------------------------------------------------------------------------


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError, ValueError):
        return 0.0


class _Sampler(threading.Thread):
    """Peak VmRSS of the client process and peak summed RssAnon of the database's backends; the CPU seconds
    both used (load-independent, unlike wall time on a shared machine)."""

    def __init__(self, client_pid: int, dsn: str, dbname: str) -> None:
        super().__init__(daemon=True)
        self.client_pid, self.dsn, self.dbname = client_pid, dsn, dbname
        self.client_peak_kb = 0
        self.server_peak_kb = 0
        self.server_backends = 0
        self.client_cpu = 0.0
        self.backend_cpu: dict[int, float] = {}
        self.done = threading.Event()

    @property
    def server_cpu(self) -> float:
        return sum(self.backend_cpu.values())

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            own = conn.info.backend_pid
            pids: list[int] = []
            tick = 0
            while not self.done.is_set():
                if tick % 10 == 0:  # new backends: every 0.2 s is enough
                    pids = [r[0] for r in conn.execute(
                        "select pid from pg_stat_activity where datname = %s and pid <> %s",
                        [self.dbname, own]).fetchall()]
                    self.server_backends = max(self.server_backends, len(pids))
                tick += 1
                self.client_peak_kb = max(self.client_peak_kb, _status_kb(self.client_pid, "VmRSS"))
                self.client_cpu = max(self.client_cpu, _cpu_seconds(self.client_pid))
                for pid in pids:
                    self.backend_cpu[pid] = max(self.backend_cpu.get(pid, 0.0), _cpu_seconds(pid))
                self.server_peak_kb = max(self.server_peak_kb, sum(_status_kb(p, "RssAnon") for p in pids))
                time.sleep(0.02)


def run_case(server_dsn: str, lang: str, size_name: str, workdir: Path) -> dict[str, object]:
    from sag_pg.bench.database import temporary_database

    path = workdir / f"big-{lang}-{size_name}.md"
    path.write_text(synthetic_document(lang, SIZES[size_name]), encoding="utf-8")
    with temporary_database(server_dsn, "bigdoc") as dsn:
        import psycopg

        from sag_pg import SAG, Settings

        SAG(settings=Settings(database_url=dsn)).close()  # the schema, before the clock starts
        dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        env = {k: v for k, v in os.environ.items()}
        env.update(SAG_DATABASE_URL=dsn, SAG_EMBEDDER="hash")
        env.pop("SAG_LLM", None)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
        child = subprocess.Popen([sys.executable, __file__, "--child", str(path)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        sampler = _Sampler(child.pid, dsn, str(dbname))
        sampler.start()
        out, _ = child.communicate()
        sampler.done.set()
        sampler.join()
        if child.returncode != 0:
            raise SystemExit(f"case {lang} {size_name} failed (exit {child.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(lang=lang, size=size_name, bytes=path.stat().st_size, client_peak_mb=sampler.client_peak_kb / 1024,
                  server_peak_mb=sampler.server_peak_kb / 1024, server_backends=sampler.server_backends,
                  client_cpu=sampler.client_cpu, server_cpu=sampler.server_cpu)
    path.unlink()
    return result


def child(path: Path) -> None:
    """One ingest, as ``sag-pg ingest PATH`` does it; prints its timings as one JSON line."""
    from sag_pg import SAG
    from sag_pg.ingest.readers import read_inputs

    sag = SAG()
    sag.embedder.embed(["warm up"])  # numpy, the embedder and the database driver loaded: the baseline
    # The summariser's first call loads sumy and its stemmer (seconds on a busy machine): once per process,
    # not per megabyte.
    warm = ("Warm up the summary. Ada met Alan in London. They wrote letters. Grace read them. "
            "The letters were kept in Boston. 王伟在上海工作。他写了三封信。")
    extractor = sag.extractor()
    extractor.summary(warm, title="")
    from sag_pg.text.tokenize import search_tokens
    from sag_pg.types import Chunk

    search_tokens(warm)  # the Chinese word segmenter's dictionary
    for event in extractor.events(Chunk(0, "", warm, 1, 1), summary="", doc_title=""):
        extractor.keys(event, summary="", doc_title="", chunk_title="", pre=None)
    baseline_kb = _status_kb(os.getpid(), "VmRSS")
    started = time.perf_counter()
    docs = list(read_inputs([path]))
    read = time.perf_counter() - started
    report = sag.ingest(docs)
    total = time.perf_counter() - started
    sag.close()
    if report.failed or report.documents != 1:
        raise SystemExit(f"not stored: {report.errors}")
    print(json.dumps({"read": read, "total": total, "timings": report.timings, "chunks": report.chunks,
                      "events": report.events, "keys": report.keys, "baseline_mb": baseline_kb / 1024,
                      "peak_mb": _status_kb(os.getpid(), "VmHWM") / 1024}))


PHASES = {"read": ("read",), "prepare": ("chunk",), "extract": ("summary", "events", "keys"),
          "embed": ("embed", "embed_keys"), "store": ("store",), "index": ("index",)}


def phase_seconds(result: dict[str, object]) -> dict[str, float]:
    timings = dict(result["timings"])  # type: ignore[call-overload]
    timings["read"] = result["read"]
    return {phase: sum(float(timings.get(n, 0.0)) for n in names) for phase, names in PHASES.items()}


def show(result: dict[str, object]) -> str:
    kb = int(result["bytes"]) / 1000  # type: ignore[call-overload]
    mb = kb / 1000
    phases = phase_seconds(result)
    total = float(result["total"])  # type: ignore[arg-type]
    events = int(result["events"]) or 1  # type: ignore[call-overload]
    head = (f"{result['lang']} {result['size']} ({kb:.0f} KB): {total:.1f} s end to end, {kb / total:.1f} KB/s, "
            f"{total / mb:.1f} s/MB; chunks {result['chunks']}, events {result['events']}, key links "
            f"{result['keys']} ({int(result['keys']) / events:.2f} per event)")  # type: ignore[call-overload]
    speeds = "  phase KB/s (s): " + ", ".join(
        f"{p} {kb / s:.0f} ({s:.2f})" if s > 0 else f"{p} - (0)" for p, s in phases.items())
    client, baseline, server = (float(result[k]) for k in ("client_peak_mb", "baseline_mb", "server_peak_mb"))  # type: ignore[arg-type]
    memory = (f"  memory: client peak {client:.0f} MB (baseline {baseline:.0f} MB, +{(client - baseline) / mb:.0f} "
              f"MB/MB), server peak {server:.0f} MB private in {result['server_backends']} backends "
              f"({server / mb:.0f} MB/MB)")
    client_cpu, server_cpu = float(result.get("client_cpu", 0.0)), float(result.get("server_cpu", 0.0))  # type: ignore[arg-type]
    cpu = (f"  CPU: client {client_cpu:.1f} s, server {server_cpu:.1f} s ({kb / max(client_cpu, server_cpu, 1e-9):.0f} "
           f"KB/s if the two overlapped on two idle cores, {kb / max(client_cpu + server_cpu, 1e-9):.0f} on one)")
    lines = [head, speeds, memory, cpu]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256K,1M,4M", help="comma-separated: 256K, 1M, 4M")
    parser.add_argument("--langs", default="en,zh", help="comma-separated: en, zh")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    from sag_pg import Settings
    from sag_pg.db.connection import resolve_dsn

    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} cores", flush=True)
    server = resolve_dsn(Settings.from_env())
    results = []
    with tempfile.TemporaryDirectory(prefix="sag-bigdoc-") as tmp:
        for lang in args.langs.split(","):
            for size in args.sizes.split(","):
                result = run_case(server, lang, size, Path(tmp))
                results.append(result)
                print(show(result), flush=True)
    print(f"load average after {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
