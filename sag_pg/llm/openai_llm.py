"""An :class:`~sag_pg.llm.base.LLM` for any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp…).

The openai client's own retries are switched off (``max_retries=0``): the retry policy is
ours, so that it is the same on every server, honours ``Retry-After`` with a cap, and can
be tested against a local fake server with tiny delays.

Answers are streamed (``stream: true``): the timeout is then an idle timeout, the longest silence allowed
between two pieces of an answer (the first included: a CPU model reads the prompt before it writes), so a slow
local model that keeps writing is never cut off, however long its answer takes (issue #37 item 13: 105-1,023 s a
call on a 1.5B model).  A request given up (idle timeout, an error, Ctrl-C) closes its connection, which is how
llama.cpp's server, vLLM and Ollama learn to stop generating it; an unstreamed request was generated to its end
while its retry queued behind it.  A server that ignores ``stream`` and answers one JSON body works too.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Self

import openai

try:  # the HTTP library of the openai package: httpx, or its fork httpx2 in recent releases
    import httpx2 as _httpx  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - older openai releases
    import httpx as _httpx  # type: ignore[no-redef]

from ..errors import ConfigError, LLMError
from .base import Usage
from .jsonparse import JSONAnswerError, excerpt, parse_answer, strip_reasoning
from .retry import Backoff, is_retryable_status, retry_after_seconds

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers (vLLM, Ollama, llama.cpp) want *some* bearer token and ignore its value.
PLACEHOLDER_API_KEY = "sk-no-key-required"

# Appended to every JSON request's system message; OpenAI's JSON mode also requires the
# word "JSON" to appear in the messages.
JSON_INSTRUCTION = (
    "Respond with a single valid JSON value only: no explanations, no Markdown, no code fences."
)
REPAIR_REQUEST = (
    "Your previous answer could not be used: {error}.\n"
    "Reply with the corrected JSON only (no explanations, no code fences). "
    "It must be valid JSON that matches this JSON Schema:\n{schema}"
)

Message = dict[str, str]
# What JSON requests ask with, strongest first; a server that refuses one gets the next, for the rest of the run
# (SAG_LLM_STRUCTURED_OUTPUT picks where to start):
# - json_schema: OpenAI's response_format {"type": "json_schema", "json_schema": {"schema": ...}} (OpenAI, vLLM,
#   Ollama, llama.cpp's llama-server);
# - json_object+schema: {"type": "json_object", "schema": ...}, the older form that llama-cpp-python's server
#   (which refuses json_schema), llama-server and Anyscale-style endpoints turn into a grammar of the schema;
# - json_object: JSON mode, any JSON; none: the prompt alone (answers are parsed, checked and repaired anyway).
STRUCTURED_OUTPUTS = ("json_schema", "json_object+schema", "json_object", "none")


class OpenAILLM:
    """Chat completions through the ``openai`` package, with our retries, JSON repair and a concurrency bound.

    ``max_retries`` counts retries after the first attempt. ``backoff_base``/``backoff_max``
    shape the exponential backoff and ``retry_after_max`` caps a server's ``Retry-After``;
    tests set them to milliseconds.

    ``timeout`` is the time one request may take once the server works on it.  A request may first wait behind
    the client's other ``concurrency - 1`` requests (llama.cpp, Ollama and other local servers answer one at a
    time), so each request is given ``timeout * concurrency``: otherwise the queued ones time out and, retried,
    are generated twice.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        temperature: float = 0.0,
        *,
        max_tokens: int = 4096,
        structured_output: str = "json_schema",
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
    ) -> None:
        if not model:
            raise ConfigError("OpenAILLM needs a model name (settings: llm = 'openai:MODEL')")
        if max_retries < 0:
            raise ConfigError(f"llm_max_retries must be >= 0, got {max_retries}")
        if concurrency < 1:
            raise ConfigError(f"llm_concurrency must be >= 1, got {concurrency}")
        if timeout <= 0:
            raise ConfigError(f"llm_timeout must be > 0 seconds, got {timeout}")
        if max_tokens < 0:
            raise ConfigError(f"llm_max_tokens must be >= 0 (0: no cap), got {max_tokens}")
        if structured_output not in STRUCTURED_OUTPUTS:
            raise ConfigError(f"llm_structured_output must be one of {', '.join(STRUCTURED_OUTPUTS)}, "
                              f"got {structured_output!r}")
        if not api_key:
            if not base_url:
                # Settings are the only source of configuration: no silent OPENAI_API_KEY fallback.
                raise ConfigError(
                    f"LLM openai:{model} needs an API key (SAG_LLM_API_KEY / llm_api_key), "
                    "or SAG_LLM_BASE_URL pointing at a local OpenAI-compatible server"
                )
            api_key = PLACEHOLDER_API_KEY
        self.model = model
        self.name = f"openai:{model}"
        self.temperature = temperature
        # Sent with every request: without it a small local model can generate until its context is full,
        # long after our client gave up waiting (the server does not notice a closed connection).
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self.request_timeout = timeout * concurrency
        self.usage = Usage()
        self.backoff = Backoff(base=backoff_base, maximum=backoff_max, retry_after_max=retry_after_max)
        self._slots = threading.BoundedSemaphore(concurrency)
        self._count_lock = threading.Lock()
        # Optional request parameters this server rejected (temperature on reasoning models, max_tokens):
        # dropped for the life of the client.
        self._unsupported: set[str] = set()
        # Structured output: the index in STRUCTURED_OUTPUTS of what JSON requests ask with now.
        self._rung = STRUCTURED_OUTPUTS.index(structured_output)
        # JSON answers received, by the structured-output mode their request asked with (for --verbose).
        self.json_requests: dict[str, int] = {}
        # Whether a streamed answer came without a usage report (llama-cpp-python's server): logged once.
        self._usage_unreported = False
        # Replaced by tests that want to see the delays without waiting for them.
        self._sleep: Callable[[float], None] = time.sleep
        try:
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=base_url or DEFAULT_BASE_URL,
                timeout=self.request_timeout,
                max_retries=0,
            )
        except openai.OpenAIError as exc:
            raise ConfigError(f"cannot create the OpenAI client for {self.name}: {exc}") from exc

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url).rstrip("/")

    @property
    def json_mode(self) -> bool:
        """Whether a ``response_format`` is still being sent."""
        return self.structured_output != "none"

    @property
    def structured_output(self) -> str:
        """What JSON answers are asked with now: one of :data:`STRUCTURED_OUTPUTS`."""
        return STRUCTURED_OUTPUTS[self._rung]

    def _response_format(self, schema: Mapping[str, Any] | None, purpose: str) -> dict[str, Any] | None:
        mode = self.structured_output
        if mode == "none":
            return None
        if schema is None or mode == "json_object":
            return {"type": "json_object"}
        if mode == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": _schema_name(purpose), "schema": dict(schema), "strict": False}}
        return {"type": "json_object", "schema": dict(schema)}

    def structured_output_report(self) -> str:
        """One line for ``--verbose``: the mode now in use and the JSON answers received with each mode.

        Example, a server that refused json_schema: ``LLM openai:m at http://h/v1: structured output json_object;
        JSON answers by mode: json_object 3`` (a refused request is not an answer, so json_schema is not counted).
        """
        counts = ", ".join(f"{mode} {n}" for mode, n in self.json_requests.items()) or "none yet"
        return (f"LLM {self.name} at {self.endpoint}: structured output {self.structured_output}; "
                f"JSON answers by mode: {counts}")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAILLM(model={self.model!r}, endpoint={self.endpoint!r})"

    # -- public API -------------------------------------------------------------------------

    def complete_text(self, prompt: str, *, system: str | None = None, purpose: str = "") -> str:
        answer = self._chat(_messages(prompt, system), json_mode=False, purpose=purpose)
        return strip_reasoning(answer)

    def complete_json(
        self,
        prompt: str,
        *,
        schema: Mapping[str, Any],
        system: str | None = None,
        purpose: str = "",
    ) -> Any:
        system = f"{system}\n\n{JSON_INSTRUCTION}" if system else JSON_INSTRUCTION
        messages = _messages(prompt, system)
        answer = self._chat(messages, json_mode=True, purpose=purpose, schema=schema)
        try:
            return parse_answer(answer, schema)
        except JSONAnswerError as first:
            log.info("%s: unusable JSON for %s (%s); asking for a repair", self.name, purpose or "?", first)
            problem = first
        # One repair round: the model sees its own answer and what is wrong with it.
        repair = [
            *messages,
            {"role": "assistant", "content": answer},
            {
                "role": "user",
                "content": REPAIR_REQUEST.format(
                    error=problem, schema=json.dumps(schema, ensure_ascii=False, sort_keys=True)
                ),
            },
        ]
        second = self._chat(repair, json_mode=True, purpose=purpose, schema=schema)
        try:
            return parse_answer(second, schema)
        except JSONAnswerError as exc:
            raise self._error(
                purpose, f"answered unusable JSON twice ({exc}); last answer: {excerpt(second)!r}"
            ) from exc

    # -- transport --------------------------------------------------------------------------

    def _chat(self, messages: list[Message], *, json_mode: bool, purpose: str,
              schema: Mapping[str, Any] | None = None) -> str:
        """One answer's text, retrying transient failures; raises LLMError when out of retries."""
        attempt = 0
        while True:
            optional: dict[str, Any] = {"temperature": self.temperature}
            if self.max_tokens:
                # OpenAI's reasoning models refuse max_tokens and want max_completion_tokens instead.
                cap = "max_tokens" if "max_tokens" not in self._unsupported else "max_completion_tokens"
                optional[cap] = self.max_tokens
            asked = self.structured_output if json_mode else None
            response_format = self._response_format(schema, purpose) if json_mode else None
            if response_format is not None:
                optional["response_format"] = response_format
            # Streamed, with the usage in the last piece; a server that rejects either parameter loses it below.
            optional["stream"] = True
            optional["stream_options"] = {"include_usage": True}
            optional = {k: v for k, v in optional.items() if k not in self._unsupported}
            if not optional.get("stream"):
                optional.pop("stream_options", None)
            try:
                with self._slots, self._client.chat.completions.with_streaming_response.create(
                        model=self.model,
                        messages=messages,  # type: ignore[arg-type]
                        **optional,
                ) as raw:
                    text = self._receive(raw, purpose)
            except _httpx.TimeoutException as exc:  # silent longer than the idle timeout while answering
                failure = f"timed out: no answer for {self.request_timeout:g}s"
                wait = self.backoff.delay(attempt)
                error: Exception = exc
            except _httpx.TransportError as exc:  # the connection broke while answering
                failure = f"connection failed while answering ({exc})"
                wait = self.backoff.delay(attempt)
                error = exc
            except openai.APIStatusError as exc:
                if _refuses_response_format(exc, optional):
                    with self._count_lock:
                        # Another thread may have stepped down already on the same refusal.
                        if asked == self.structured_output:
                            self._rung += 1
                    log.warning("%s at %s refuses response_format %s; asking with %s instead",
                                self.name, self.endpoint, asked, self.structured_output)
                    continue
                rejected = _rejected_parameter(exc, optional)
                if rejected is not None:
                    log.warning(
                        "%s at %s rejects the %r parameter; sending requests without it",
                        self.name,
                        self.endpoint,
                        rejected,
                    )
                    self._unsupported.add(rejected)
                    continue  # not a retry: the request itself was wrong for this server
                failure = f"HTTP {exc.status_code}: {excerpt(exc.message, 300)}"
                if not is_retryable_status(exc.status_code):
                    raise self._error(purpose, failure) from exc
                wait = self.backoff.delay(attempt, retry_after_seconds(exc.response.headers))
                error = exc
            except openai.APITimeoutError as exc:
                failure = f"timed out after {self.request_timeout:g}s"
                wait = self.backoff.delay(attempt)
                error = exc
            except openai.APIConnectionError as exc:
                failure = f"connection failed ({exc.__cause__ or exc})"
                wait = self.backoff.delay(attempt)
                error = exc
            except openai.OpenAIError as exc:
                raise self._error(purpose, f"client error: {excerpt(str(exc), 300)}") from exc
            else:
                if asked is not None:
                    with self._count_lock:
                        self.json_requests[asked] = self.json_requests.get(asked, 0) + 1
                return text
            if attempt >= self.max_retries:
                raise self._error(
                    purpose, f"gave up after {attempt + 1} attempts; last: {failure}"
                ) from error
            attempt += 1
            log.warning(
                "%s at %s: %s; retry %d/%d in %.2fs",
                self.name,
                self.endpoint,
                failure,
                attempt,
                self.max_retries,
                wait,
            )
            self._sleep(wait)

    def _receive(self, raw: Any, purpose: str) -> str:
        """The answer's text from a streamed response (server-sent events), or from one JSON body when the
        server does not stream; the usage is counted.  Leaving the ``with`` block closes the connection."""
        if "text/event-stream" not in raw.headers.get("content-type", ""):
            body = raw.read()
            try:
                data = json.loads(body)
            except ValueError:
                data = None
            return self._read(data, purpose, body)
        pieces: list[str] = []
        prompt_tokens = completion_tokens = 0
        reported = False
        content_events = 0
        for line in raw.iter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                event = json.loads(payload)
            except ValueError:
                raise self._error(purpose, f"streamed something that is not JSON: {excerpt(payload)!r}") from None
            if not isinstance(event, dict):
                continue
            if "error" in event:
                raise self._error(purpose, f"stream error: {excerpt(json.dumps(event['error']), 300)}")
            usage = event.get("usage")
            if isinstance(usage, dict):
                reported = True
                prompt_tokens = int(usage.get("prompt_tokens") or 0)
                completion_tokens = int(usage.get("completion_tokens") or 0)
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or choice.get("message") or {}
                if isinstance(delta, dict) and delta.get("content"):
                    pieces.append(str(delta["content"]))
                    content_events += 1
        if not reported:
            # llama-cpp-python's server ignores stream_options and streams no usage: its answers counted 0 tokens.
            # It (like llama-server, vLLM and Ollama) streams one token a piece, so the pieces are the completion's
            # tokens; the prompt's are unknown (0).
            completion_tokens = content_events
            if not self._usage_unreported:
                self._usage_unreported = True
                log.info("%s at %s streams no token usage; completion tokens are counted as streamed pieces, "
                         "prompt tokens are not counted", self.name, self.endpoint)
        self.usage.add(prompt_tokens, completion_tokens)
        return "".join(pieces)

    def _read(self, data: Any, purpose: str, body: bytes = b"") -> str:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list):  # e.g. an HTML page with status 200 from a misconfigured proxy
            shown = body.decode("utf-8", "replace") if body else str(data)
            raise self._error(
                purpose, f"answered something that is not a chat completion: {excerpt(shown)!r}"
            )
        usage = data.get("usage") or {}
        self.usage.add(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        if not choices:
            return ""
        message = choices[0].get("message") or {}
        return str(message.get("content") or "")

    def _error(self, purpose: str, detail: str) -> LLMError:
        # Model and endpoint only: the API key never appears in messages or logs.
        doing = f" ({purpose})" if purpose else ""
        return LLMError(f"LLM {self.name} at {self.endpoint}{doing} {detail}")


def _messages(prompt: str, system: str | None) -> list[Message]:
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    return messages


def _refuses_response_format(exc: openai.APIStatusError, sent: Mapping[str, Any]) -> bool:
    """A 400/422 to a request with a response_format that names it, its type or the schema field; or a 500 that
    names both response_format and the type sent.

    llama-cpp-python's server answers json_schema with HTTP 500 and a pydantic message: ``'loc': ('body',
    'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'", 'input': 'json_schema'``;
    OpenAI names ``response_format``; others say "json_schema".
    """
    response_format = sent.get("response_format")
    if not response_format:
        return False
    text = f"{exc.message} {exc.body}"
    if exc.status_code == 500:
        return "response_format" in text and f"'{response_format['type']}'" in text
    if exc.status_code not in (400, 422):
        return False
    named = ["response_format", response_format["type"]] + (["schema"] if "schema" in response_format else [])
    return any(name in text for name in named)


def _schema_name(purpose: str) -> str:
    """response_format's schema name: letters, digits, _ and - only, at most 64 characters."""
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "_" for ch in purpose)[:64]
    return name or "answer"


def _rejected_parameter(exc: openai.APIStatusError, sent: Mapping[str, Any]) -> str | None:
    """The optional parameter a 400/422 complains about, if it names one we sent."""
    if exc.status_code not in (400, 422):
        return None
    text = f"{exc.message} {exc.body}"
    # Quoted names first: "'max_tokens' ... use 'max_completion_tokens'" is about max_tokens.
    for pattern in ("'{}'", '"{}"', "`{}`", "{}"):
        for name in sent:
            if pattern.format(name) in text:
                return name
    return None
