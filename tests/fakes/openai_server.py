"""A local OpenAI-compatible `/v1/chat/completions` server that records what it receives.

It speaks OpenAI's streaming format byte for byte: HTTP/1.1 chunked `text/event-stream`,
one `data: {json}\\n\\n` event per chunk (`chat.completion.chunk`, `choices[0].delta`
with `role` first, then `content` pieces, then an empty delta with `finish_reason`), a
final usage chunk with `"choices": []` when `stream_options.include_usage` is set, and
`data: [DONE]\\n\\n`. Errors use OpenAI's `{"error": {...}}` body.

Runs in a background thread, so sync and async tests can both use it:

    with FakeOpenAI() as fake:
        fake.script.append(Reply.text("hello world"))
        fake.script.append(Reply.status(429, headers={"Retry-After": "0"}))
        ... point a profile at fake.url (".../v1") ...
        fake.requests[0].json["messages"]

Replies are consumed in order; when the script is empty, `default` answers.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PIECE = re.compile(r"\s*\S+|\s+")


@dataclass
class Reply:
    """One scripted answer. Build with the class methods."""

    kind: str = "text"                    # text | status | cut | hang | stall | raw
    answer: str = ""
    pieces: list[str] | None = None       # content chunks; default: words with spaces
    status_code: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    ttft_s: float = 0.0                   # delay before the first content chunk
    delay_s: float = 0.0                  # delay between content chunks
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None   # default: counted from the request and pieces
    cut_after: int = 0                    # for "cut": content chunks sent before closing
    hang_s: float = 0.0                   # for "hang": silence after the headers
    send_usage: bool = True               # False: no usage chunk even when asked for
    raw: bytes = b""                      # for "raw": the whole 200 body, as given
    content_type: str = "text/event-stream; charset=utf-8"

    @classmethod
    def text(cls, answer: str, **kw: Any) -> Reply:
        """Stream `answer` (as word pieces unless `pieces=` is given), then usage, [DONE]."""
        return cls(kind="text", answer=answer, **kw)

    @classmethod
    def status(cls, code: int, message: str = "", *, headers: dict[str, str] | None = None,
               err_type: str = "invalid_request_error", err_code: str | None = None) -> Reply:
        body = {"error": {"message": message or f"HTTP {code}", "type": err_type,
                          "param": None, "code": err_code}}
        return cls(kind="status", status_code=code, headers=headers or {}, body=body)

    @classmethod
    def cut(cls, text: str, after: int) -> Reply:
        """Send `after` content chunks of `text`, then drop the connection (no [DONE])."""
        return cls(kind="cut", answer=text, cut_after=after)

    @classmethod
    def hang(cls, seconds: float) -> Reply:
        """Send 200 headers, then nothing for `seconds` (provokes a read timeout)."""
        return cls(kind="hang", hang_s=seconds)

    @classmethod
    def stall(cls, seconds: float) -> Reply:
        """Send nothing at all, not even headers, for `seconds` (read timeout on open)."""
        return cls(kind="stall", hang_s=seconds)

    @classmethod
    def raw_body(cls, body: bytes, content_type: str = "text/event-stream") -> Reply:
        """Answer 200 with exactly `body` (malformed SSE, an HTML page, ...)."""
        return cls(kind="raw", raw=body, content_type=content_type)

    def content_pieces(self) -> list[str]:
        return list(self.pieces) if self.pieces is not None else _PIECE.findall(self.answer)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class FakeOpenAI:
    """Start with `with FakeOpenAI() as fake:` or `.start()`/`.stop()`; `url` ends in /v1."""

    def __init__(self, *, model: str = "fake-model", default: Reply | None = None) -> None:
        self.model = model
        self.default = default or Reply(kind="text", answer="ok")
        self.script: list[Reply] = []
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0  # answers the client hung up on mid-stream
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_reply(self) -> Reply:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _record(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.owner.requests.append(RecordedRequest(
            self.command, self.path, {k: v for k, v in self.headers.items()}, body,
            time.time()))
        return body

    def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._record()
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": self.owner.model, "object": "model", "created": 0, "owned_by": "fake"}]})
        else:
            self._json(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                       "param": None, "code": None}})

    def do_POST(self) -> None:
        body = self._record()
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"unknown path {self.path}",
                                       "type": "invalid_request_error", "param": None,
                                       "code": None}})
            return
        try:
            req = json.loads(body)
        except ValueError:
            self._json(400, {"error": {"message": "invalid JSON body",
                                       "type": "invalid_request_error", "param": None,
                                       "code": None}})
            return
        reply = self.owner.next_reply()
        if reply.kind == "stall":
            time.sleep(reply.hang_s)
            self.close_connection = True
            return
        if reply.kind == "raw":
            self.send_response(200)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.raw)))
            self.end_headers()
            self.wfile.write(reply.raw)
            return
        if reply.kind == "status":
            self._json(reply.status_code, reply.body, reply.headers)
            return
        pieces = reply.content_pieces()
        prompt_tokens = sum(len(str(m.get("content", "")).split()) + 4
                            for m in req.get("messages", []))
        usage = reply.usage or {"prompt_tokens": prompt_tokens,
                                "completion_tokens": len(pieces),
                                "total_tokens": prompt_tokens + len(pieces)}
        if not req.get("stream"):
            self._json(200, {"id": "chatcmpl-fake", "object": "chat.completion",
                             "created": int(time.time()), "model": req.get("model"),
                             "choices": [{"index": 0, "message": {"role": "assistant",
                                          "content": "".join(pieces)},
                                          "logprobs": None,
                                          "finish_reason": reply.finish_reason}],
                             "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        include_usage = (bool((req.get("stream_options") or {}).get("include_usage"))
                         and reply.send_usage)
        created = int(time.time())
        model = req.get("model")

        def chunk(delta: dict, finish: str | None) -> dict:
            obj = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                   "created": created, "model": model, "system_fingerprint": "fp_fake",
                   "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                "finish_reason": finish}]}
            if include_usage:
                obj["usage"] = None
            return obj

        try:
            if reply.kind == "hang":
                self.wfile.flush()
                time.sleep(reply.hang_s)
                return
            self._event(chunk({"role": "assistant", "content": ""}, None))
            if reply.ttft_s:
                time.sleep(reply.ttft_s)
            for i, piece in enumerate(pieces):
                if reply.kind == "cut" and i >= reply.cut_after:
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                if i and reply.delay_s:
                    time.sleep(reply.delay_s)
                self._event(chunk({"content": piece}, None))
            self._event(chunk({}, reply.finish_reason))
            if include_usage:
                self._event({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                             "created": created, "model": model,
                             "system_fingerprint": "fp_fake", "choices": [], "usage": usage})
            self._event_raw(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.owner.disconnects += 1
            self.close_connection = True

    def _event(self, obj: dict) -> None:
        self._event_raw(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")

    def _event_raw(self, data: bytes) -> None:
        self._write_chunk(data)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
