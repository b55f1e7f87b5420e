"""The wire format of OpenAI-compatible ``/chat/completions``: what rmbench asks
(:class:`ChatRequest`), what it keeps of an answer (:class:`ChatReply`, JSON-ready for the call
cache), how an answer or an error response is read, and the client's counters and error.

:class:`Failed` is one failed attempt, raised while an answer is read and handled by
:mod:`rmbench.models.judge.client`'s retry policy. :func:`parse_reply` reads a reply
defensively: anything it cannot use (no choice, a malformed message, a usage count that is not a
whole number in ``[0, MAX_TOKEN_COUNT]``, a NaN or infinite logprob...) is
:class:`MalformedReply` (a :class:`Failed`), never another exception, so one bad reply is one
failed call (a batch line: one failed line), and every reply kept is JSON-ready.
"""

from __future__ import annotations

import email.utils
import json
import math
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

import httpx

from rmbench.core.images import Image
from rmbench.errors import ConfigError

RETRY_AFTER_MAX = 120.0  # seconds: the longest Retry-After honoured
ERROR_CHARS = 200  # how much of a server's error message a JudgeServerError quotes
MAX_REPLY_BYTES = 1_000_000
"""The default limit on one reply's body (``max_reply_bytes``): a larger one is a failed call."""
MAX_TOKEN_COUNT = 10**12
"""The largest usage count (prompt or completion tokens) believed; above it the reply is malformed."""

TopLogprobs = tuple[tuple[tuple[str, float], ...], ...]


class Secret:
    """Holds an API key so that no repr or ``vars()`` of its holder shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret>"

    @classmethod
    def of(cls, api_key: str | None, where: str) -> Secret | None:
        """``api_key`` held, or None for none; a key an HTTP header cannot carry is a one-line
        :class:`ConfigError` naming ``where`` it was for (never the key)."""
        if api_key is not None and not (api_key.isascii() and api_key.isprintable() and " " not in api_key):
            raise ConfigError(f"the API key for {where} has characters an HTTP header cannot carry")
        return cls(api_key) if api_key else None

    @staticmethod
    def scrub(key: Secret | None, text: str) -> str:
        """``text`` with ``key`` masked (a server may echo it)."""
        return text.replace(key.value, "***") if key is not None else text


class JudgeServerError(ConfigError):
    """The server failed, refused a request or cannot be reached; a one-line message naming the
    server and the model (never the API key)."""


MIME_FROM_NAME = "from-name"
""":attr:`ChatRequest.image_mime`: each image labelled with the type its file name says."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to ask for: the conversation as (role, content) pairs and the sampling."""

    messages: tuple[tuple[str, str], ...]
    max_tokens: int = 1024
    temperature: float | None = 0.0
    """None: not sent (the server's default; Multimodal RewardBench's client sends none)."""
    seed: int | None = None
    top_logprobs: int | None = None
    top_p: float | None = None
    n: int | None = None
    """``top_p`` and ``n`` are sent only when set (an official client that sends them: JudgeBench's
    vanilla sends ``top_p: 1.0``, RewardBench 2's best-of-4 ``n: 1``)."""
    images: tuple[tuple[Image, ...], ...] = ()
    """The images each message carries, one tuple per message (``()``: a text-only request). A
    message with images is sent as OpenAI content parts: its text, then each image as an
    ``image_url`` data URL, the layout both multimodal benchmarks' clients send."""
    image_mime: str | None = None
    """The MIME type each image's data URL is labelled with: None, the type sniffed from its bytes;
    :data:`MIME_FROM_NAME`, guessed from its file name as Multimodal RewardBench's client does
    (:meth:`~rmbench.core.images.Image.name_mime`); else that type for every image
    (VL-RewardBench's client labels every image ``image/png``)."""
    extra: tuple[tuple[str, Any], ...] = ()
    """Other keys an official client sends in the body, as (key, value) pairs (VL-RewardBench's
    ``stream: false``)."""
    sample: int = 0
    """Which of K identical requests this is (a protocol asking one game K times with no seed): part
    of the call key, never sent, so K samples make K calls."""

    def __post_init__(self) -> None:
        """Accept lists for the pairs; check every pair is two strings and the images line up."""
        messages = tuple(tuple(m) for m in self.messages)
        if not messages or not all(len(m) == 2 and all(isinstance(x, str) for x in m) for m in messages):
            raise ConfigError("a chat request needs (role, content) pairs of strings")
        object.__setattr__(self, "messages", messages)
        images = tuple(tuple(i) for i in self.images)
        if images and (len(images) != len(messages) or not all(isinstance(x, Image) for i in images for x in i)):
            raise ConfigError("a chat request's images come as one tuple of Image per message")
        object.__setattr__(self, "images", images if any(images) else ())

    def body(self, model: str, keyed: bool = False) -> dict:
        """The JSON body POSTed to ``{base_url}/chat/completions``; ``keyed``: each image as its
        content hash (``sha256:<hex>``) instead of its bytes, the form the call cache keys."""
        body: dict[str, Any] = {"model": model, "messages": [{"role": r, "content": self._content(i, keyed)}
                                                             for i, (r, _) in enumerate(self.messages)],
                                "max_tokens": self.max_tokens}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.n is not None:
            body["n"] = self.n
        if self.seed is not None:
            body["seed"] = self.seed
        if self.top_logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        body.update(self.extra)
        if keyed and self.sample:
            body["sample"] = self.sample  # the call key's only: never sent
        return body

    def message_images(self, i: int) -> tuple[Image, ...]:
        """The images message ``i`` carries (none for a text-only request)."""
        return self.images[i] if self.images else ()

    def _content(self, i: int, keyed: bool) -> str | list[dict[str, Any]]:
        text, images = self.messages[i][1], self.message_images(i)
        if not images:
            return text
        return [{"type": "text", "text": text},
                *({"type": "image_url", "image_url": {"url": self._image_key(image) if keyed else
                                                      image.data_url(self.mime_of(image))}} for image in images)]

    def mime_of(self, image: Image) -> str:
        """The MIME type ``image``'s data URL is labelled with (:attr:`image_mime`)."""
        if self.image_mime is None:
            return image.mime
        return image.name_mime() if self.image_mime == MIME_FROM_NAME else self.image_mime

    def _image_key(self, image: Image) -> str:
        """An image in the call key: its content hash, and the type it is labelled with when a
        protocol labels it otherwise than sniffed (the same bytes sent otherwise)."""
        return f"sha256:{image.sha256}" + (f";{self.mime_of(image)}" if self.image_mime is not None else "")

    def with_messages(self, messages: tuple[tuple[str, str], ...]) -> ChatRequest:
        """The same request (sampling, images) for a conversation that extends this one's (a
        protocol's follow-up: the images stay on their messages, the new messages carry none)."""
        images = self.images + ((),) * (len(messages) - len(self.messages)) if self.images else ()
        return replace(self, messages=messages, images=images)


@dataclass(frozen=True)
class ChatReply:
    """What the server answered to one request, and what it took to get it."""

    text: str
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    retries: int
    top_logprobs: TopLogprobs | None
    no_content: bool = False
    """The server sent no content at all (``content: null``: a reasoning judge cut off inside its
    reasoning, or a refusal), as opposed to an empty string; ``text`` is "" either way."""

    def to_json(self) -> dict:
        """A JSON-ready dict; :meth:`from_json` gives back an equal reply."""
        d = asdict(self)
        if self.top_logprobs is not None:
            d["top_logprobs"] = [[[tok, lp] for tok, lp in alts] for alts in self.top_logprobs]
        return d

    @classmethod
    def from_json(cls, d: dict) -> ChatReply:
        """The reply :meth:`to_json` wrote (lists back to tuples)."""
        top = d.get("top_logprobs")
        return cls(text=str(d["text"]), reasoning=d.get("reasoning"), finish_reason=d.get("finish_reason"),
                   prompt_tokens=int(d.get("prompt_tokens", 0)), completion_tokens=int(d.get("completion_tokens", 0)),
                   latency_s=float(d.get("latency_s", 0.0)), retries=int(d.get("retries", 0)),
                   top_logprobs=None if top is None else tuple(tuple((str(t), float(lp)) for t, lp in alts)
                                                               for alts in top),
                   no_content=bool(d.get("no_content", False)))


@dataclass
class ClientStats:
    """Cumulative counts of a :class:`ChatClient`: successful calls, retried attempts, requests
    that ended in an error, attempts given up at ``timeout`` and replies that could not be used
    (:class:`MalformedReply`, an oversized one included), tokens of the successful calls and wall
    seconds inside ``complete``."""

    calls: int = 0
    retries: int = 0
    failures: int = 0
    timeouts: int = 0
    malformed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        """The counts as a dict."""
        return asdict(self)


class Failed(Exception):
    """A failed attempt: ``retry`` whether it is worth another; ``wait``: the server's Retry-After;
    ``timed_out``: no answer within the timeout (the client gave up and closed the connection)."""

    def __init__(self, reason: str, retry: bool = True, wait: float | None = None, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.retry, self.wait, self.timed_out = reason, retry, wait, timed_out


class MalformedReply(Failed):
    """A reply that cannot be used (:func:`parse_reply`, :func:`token_count`, or a body over
    ``max_reply_bytes``): one failed call, retried like any other; a batch catches it per line."""


def one_line(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def server_message(resp: httpx.Response) -> str:
    """The message of an error response: ``error.message``, ``detail`` or ``message``, else its text."""
    return body_message(resp.content)


def body_message(raw: bytes) -> str:
    """:func:`server_message` of an error response's body."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    msg: Any = None
    if isinstance(data, dict):
        err = data.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        msg = msg or data.get("detail") or data.get("message")
    if not msg:
        msg = raw.decode("utf-8", "replace")
    return one_line(msg if isinstance(msg, str) else repr(msg)) or "(no message)"


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), at most
    :data:`RETRY_AFTER_MAX`; None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value.strip())
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_MAX) if math.isfinite(seconds) else None


def token_count(value: Any, field: str) -> int:
    """A usage count: None or absent is 0; a whole number (an int, an integral float, a string of
    digits) in ``[0, MAX_TOKEN_COUNT]``; anything else (Infinity, NaN, -3, 2.5, 1e300, a list) is
    :class:`MalformedReply` naming ``field``."""
    if value is None:
        return 0
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 13:
        value = int(value.strip())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise MalformedReply(f"HTTP 200 with malformed usage: {field} is {one_line(repr(value), 40)}")
    return value


def _logprob(value: Any) -> float:
    """One logprob: a finite number <= 0 (a little above 0 is rounding)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value > 1e-6:
        raise MalformedReply(f"the server answered malformed logprobs: a logprob of {one_line(repr(value), 40)}")
    return float(value)


def _top_logprobs(logprobs: Any) -> TopLogprobs | None:
    """Per completion token, its alternatives (token, logprob), from ``choices[0].logprobs``."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None
    out = []
    for pos in logprobs["content"]:
        alts = pos.get("top_logprobs") if isinstance(pos, dict) else None
        if not isinstance(alts, list | None) or not all(isinstance(a, dict) and isinstance(a.get("token"), str)
                                                         for a in alts or []):
            raise MalformedReply("the server answered malformed logprobs")
        out.append(tuple((a["token"], _logprob(a.get("logprob"))) for a in alts or []))
    return tuple(out)


def _content(message: dict) -> str | None:
    """The message's text: a string, content parts' texts joined, or None (no content)."""
    content = message.get("content")
    if isinstance(content, list):  # content parts
        if not all(isinstance(p, dict) and isinstance(p.get("text"), str | None) for p in content):
            raise MalformedReply("HTTP 200 with malformed content parts")
        return "".join(p.get("text") or "" for p in content)
    if content is not None and not isinstance(content, str):
        raise MalformedReply(f"HTTP 200 with content of type {type(content).__name__}")
    return content


def parse_reply(data: Any, latency: float, retries: int) -> ChatReply:
    """The reply in a 200's JSON; :class:`MalformedReply` when it holds no usable choice or a
    field it keeps is malformed (see the module docstring); never another exception."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        err = data.get("error") if isinstance(data, dict) else None
        raise MalformedReply("HTTP 200 without choices" + (f": {one_line(str(err))}" if err else ""))
    choice = choices[0]
    message = choice.get("message") or {}
    finish = choice.get("finish_reason")
    if not isinstance(message, dict) or not isinstance(finish, str | None):
        raise MalformedReply("HTTP 200 with a malformed message")
    content = _content(message)
    reasoning = next((message[k] for k in ("reasoning_content", "reasoning") if isinstance(message.get(k), str)), None)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = token_count(usage.get("prompt_tokens"), "prompt_tokens"), \
        token_count(usage.get("completion_tokens"), "completion_tokens")
    return ChatReply(text=content or "", reasoning=reasoning, finish_reason=finish, prompt_tokens=tokens[0],
                     completion_tokens=tokens[1], latency_s=latency, retries=retries,
                     top_logprobs=_top_logprobs(choice.get("logprobs")), no_content=content is None)
