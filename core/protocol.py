"""Protocol v1 between the app and the inference core: JSON text frames over one websocket.

This module is the single source of truth for the wire format (``docs/protocol.md`` is
the prose version). Both ends import it, so a field added here is added for both.

Client -> server
    {"type":"hello","protocol":1}
    {"type":"generate","id":ID,"profile":NAME,"messages":[{"role":R,"content":C}],"max_tokens":N|null}
    {"type":"cancel","id":ID}
    {"type":"steer","id":ID,"text":STR}
    {"type":"ping","data":ANY}                      (data optional, echoed back)

Server -> client
    {"type":"welcome","protocol":1,"profiles":[PROFILE...],"server":{...}}
    {"type":"info","id":ID,"event":STR,...}          (extension: e.g. which cassette replays)
    {"type":"delta","id":ID,"text":STR,"tokens":N}
    {"type":"done","id":ID,"reason":"stop"|"length"|"cancelled",
     "usage":{"prompt_tokens":N,"completion_tokens":N},
     "timing":{"ttft_ms":X,"tokens_per_s":Y,"predicted":{"ttft_ms":X,"tokens_per_s":Y}},
     "source":{...}}                                  (timing.predicted and source: extensions)
    {"type":"error","id":ID|null,"code":STR,"message":STR}
    {"type":"pong","data":ANY,"server_time":FLOAT}

Validation never raises anything but :class:`ProtocolError`, which carries the error
code and, when it could be read, the stream id, so the server can answer with an
``error`` frame and keep the connection (and the other streams) up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.errors import SparkError

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1024 * 1024  # frames above this get an error frame (connection stays up)
MAX_ID_CHARS = 128
MAX_TOKENS_LIMIT = 1 << 20  # max_tokens above this is a client bug, not a long answer
MAX_PING_DATA_BYTES = 4096  # pong echoes data back: keep what a ping flood can pin small
MAX_ECHO_CHARS = 64         # client text quoted in error messages is cut to this
MAX_CONVERSATION_CHARS = 2 * MAX_FRAME_BYTES  # one stream's messages after its steers
ROLES = ("system", "user", "assistant", "tool")
DONE_REASONS = ("stop", "length", "cancelled")

# error codes (stable strings: the app may branch on them)
E_INVALID_JSON = "invalid_json"
E_BINARY_FRAME = "binary_frame"
E_UNKNOWN_TYPE = "unknown_type"
E_INVALID_FIELD = "invalid_field"
E_FRAME_TOO_LARGE = "frame_too_large"
E_HELLO_REQUIRED = "hello_required"
E_PROTOCOL_VERSION = "unsupported_protocol"
E_UNKNOWN_PROFILE = "unknown_profile"
E_DUPLICATE_ID = "duplicate_id"
E_UNKNOWN_ID = "unknown_id"
E_BUSY = "too_many_streams"
E_STEER_PENDING = "steer_pending"
E_INTERNAL = "internal"
# backend errors
E_NO_CASSETTES = "no_cassettes"
E_AUTH = "auth"
E_MODEL_NOT_FOUND = "model_not_found"
E_RATE_LIMITED = "rate_limited"
E_UPSTREAM = "upstream_error"
E_CONNECT = "connect_failed"
E_CONNECT_TIMEOUT = "connect_timeout"
E_READ_TIMEOUT = "read_timeout"
E_STREAM_CUT = "stream_cut"
E_BAD_UPSTREAM = "bad_upstream_response"
# client-side only (never on the wire): the connection dropped under a stream
E_DISCONNECTED = "disconnected"


class ProtocolError(SparkError):
    """A client frame the server cannot accept; becomes one ``error`` frame."""

    def __init__(self, code: str, message: str, stream_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.stream_id = stream_id


@dataclass(frozen=True)
class Hello:
    protocol: int


@dataclass(frozen=True)
class Generate:
    id: str
    profile: str
    messages: list[dict[str, str]]
    max_tokens: int | None = None
    # optional: the user's request as typed, without the assembled context or feedback;
    # a replay backend matches recordings on it (docs/protocol.md)
    request: str | None = None


@dataclass(frozen=True)
class Cancel:
    id: str


@dataclass(frozen=True)
class Steer:
    id: str
    text: str


@dataclass(frozen=True)
class Ping:
    data: Any = None


ClientFrame = Hello | Generate | Cancel | Steer | Ping


def _field(obj: dict, name: str, kind: type | tuple[type, ...], sid: str | None,
           *, required: bool = True) -> Any:
    if name not in obj or obj[name] is None:
        if required:
            raise ProtocolError(E_INVALID_FIELD, f"missing field '{name}'", sid)
        return None
    value = obj[name]
    # bool is an int subclass; never accept it where a number is meant
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ProtocolError(E_INVALID_FIELD, f"field '{name}' must be {_kind_name(kind)}", sid)
    if not isinstance(value, kind):
        raise ProtocolError(E_INVALID_FIELD, f"field '{name}' must be {_kind_name(kind)}", sid)
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", list: "a list", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _echo(value: Any) -> str:
    """Quote client text in an error message without echoing megabytes back."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_ECHO_CHARS else text[:MAX_ECHO_CHARS] + "..."


def _stream_id(obj: dict) -> str:
    sid = obj.get("id")
    if not isinstance(sid, str) or not sid:
        raise ProtocolError(E_INVALID_FIELD, "field 'id' must be a non-empty string", None)
    if len(sid) > MAX_ID_CHARS:
        raise ProtocolError(E_INVALID_FIELD, f"field 'id' is longer than {MAX_ID_CHARS}", None)
    return sid


def _messages(value: Any, sid: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise ProtocolError(E_INVALID_FIELD, "field 'messages' must be a non-empty list", sid)
    out: list[dict[str, str]] = []
    for i, msg in enumerate(value):
        if not isinstance(msg, dict):
            raise ProtocolError(E_INVALID_FIELD, f"messages[{i}] must be an object", sid)
        role, content = msg.get("role"), msg.get("content")
        if role not in ROLES:
            raise ProtocolError(
                E_INVALID_FIELD, f"messages[{i}].role must be one of {', '.join(ROLES)}", sid)
        if not isinstance(content, str):
            raise ProtocolError(E_INVALID_FIELD, f"messages[{i}].content must be a string", sid)
        out.append({"role": role, "content": content})
    return out


def parse_client_frame(raw: str | bytes) -> ClientFrame:
    """Decode and validate one client frame, or raise :class:`ProtocolError`.

    Never raises anything else, whatever the bytes: deep nesting (RecursionError in the
    JSON decoder), huge numbers and binary frames all become error codes.
    """
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raise ProtocolError(E_BINARY_FRAME, "binary frames are not accepted; "
                            "send each frame as a JSON text frame")
    size = len(raw.encode("utf-8", "surrogatepass"))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(E_FRAME_TOO_LARGE,
                            f"frame of {size} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    try:
        obj = json.loads(raw)
    except RecursionError:
        raise ProtocolError(E_INVALID_JSON, "frame is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int strings over Python's digit limit
        raise ProtocolError(E_INVALID_JSON, f"frame is not valid JSON: {_echo(str(exc))}") \
            from None
    if not isinstance(obj, dict):
        raise ProtocolError(E_INVALID_JSON, "frame must be a JSON object")
    readable_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    if readable_id is not None and (not readable_id or len(readable_id) > MAX_ID_CHARS):
        readable_id = None
    kind = obj.get("type")
    if kind == "hello":
        return Hello(protocol=_field(obj, "protocol", int, None))
    if kind == "ping":
        data = obj.get("data")
        if data is not None and len(encode(data)) > MAX_PING_DATA_BYTES:
            raise ProtocolError(E_INVALID_FIELD,
                                f"field 'data' of a ping is over {MAX_PING_DATA_BYTES} bytes")
        return Ping(data=data)
    if kind == "generate":
        sid = _stream_id(obj)
        profile = _field(obj, "profile", str, sid)
        messages = _messages(obj.get("messages"), sid)
        max_tokens = _field(obj, "max_tokens", int, sid, required=False)
        if max_tokens is not None and not 0 < max_tokens <= MAX_TOKENS_LIMIT:
            raise ProtocolError(E_INVALID_FIELD, "field 'max_tokens' must be an integer from "
                                f"1 to {MAX_TOKENS_LIMIT}, got {_echo(max_tokens)}", sid)
        request = _field(obj, "request", str, sid, required=False)
        return Generate(id=sid, profile=profile, messages=messages, max_tokens=max_tokens,
                        request=request)
    if kind == "cancel":
        return Cancel(id=_stream_id(obj))
    if kind == "steer":
        sid = _stream_id(obj)
        return Steer(id=sid, text=_field(obj, "text", str, sid))
    if not isinstance(kind, str):
        raise ProtocolError(E_INVALID_FIELD, "field 'type' must be a string", readable_id)
    raise ProtocolError(E_UNKNOWN_TYPE, f"unknown frame type '{_echo(kind)}' (known: hello, "
                        "generate, cancel, steer, ping)", readable_id)


# ---- server frames, typed: the server builds them, the client parses them ----

@dataclass(frozen=True)
class Welcome:
    protocol: int
    profiles: list[dict[str, Any]]
    server: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Delta:
    id: str
    text: str
    tokens: int


@dataclass(frozen=True)
class Info:
    """Extension events for a stream (e.g. event="steered", "source", "rejected")."""

    id: str
    event: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Done:
    id: str
    reason: str
    usage: dict[str, Any]
    timing: dict[str, Any]
    source: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ErrorFrame:
    id: str | None
    code: str
    message: str
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. stream_continues, retry_after_s


@dataclass(frozen=True)
class Pong:
    data: Any
    server_time: float


ServerFrame = Welcome | Delta | Info | Done | ErrorFrame | Pong


def parse_server_frame(raw: str | bytes) -> ServerFrame:
    """Decode and validate one server frame, or raise :class:`ProtocolError`.

    The client trusts nothing it has not read through here: a frame with a missing or
    mistyped field is refused as a whole instead of half-applied to a stream.
    """
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        raise ProtocolError(E_INVALID_JSON, "server frame is not valid JSON") from None
    if not isinstance(obj, dict):
        raise ProtocolError(E_INVALID_JSON, "server frame must be a JSON object")
    kind = obj.get("type")
    sid = obj.get("id") if isinstance(obj.get("id"), str) else None
    if kind == "welcome":
        profiles = _field(obj, "profiles", list, None)
        server = _field(obj, "server", dict, None, required=False) or {}
        return Welcome(_field(obj, "protocol", int, None),
                       [p for p in profiles if isinstance(p, dict)], server)
    if kind == "pong":
        time_ = _field(obj, "server_time", (int, float), None, required=False)
        return Pong(obj.get("data"), float(time_ or 0.0))
    if kind == "error":
        extra = {k: v for k, v in obj.items() if k not in ("type", "id", "code", "message")}
        return ErrorFrame(sid, str(_field(obj, "code", str, sid)),
                          str(_field(obj, "message", str, sid)), extra)
    if sid is None:
        raise ProtocolError(E_INVALID_FIELD, f"server frame {_echo(kind)} has no stream id")
    if kind == "delta":
        tokens = _field(obj, "tokens", int, sid, required=False) or 0
        if tokens < 0:
            raise ProtocolError(E_INVALID_FIELD, "field 'tokens' must not be negative", sid)
        return Delta(sid, _field(obj, "text", str, sid), tokens)
    if kind == "info":
        data = {k: v for k, v in obj.items() if k not in ("type", "id", "event")}
        return Info(sid, str(_field(obj, "event", str, sid)), data)
    if kind == "done":
        reason = _field(obj, "reason", str, sid)
        if reason not in DONE_REASONS:
            raise ProtocolError(E_INVALID_FIELD, f"done reason {_echo(reason)} is not one of "
                                f"{', '.join(DONE_REASONS)}", sid)
        return Done(sid, reason, _field(obj, "usage", dict, sid, required=False) or {},
                    _field(obj, "timing", dict, sid, required=False) or {},
                    _field(obj, "source", dict, sid, required=False) or {})
    raise ProtocolError(E_UNKNOWN_TYPE, f"unknown server frame type '{_echo(kind)}'", sid)


# ---- server frame builders (dicts; the server serialises) ----

def welcome(profiles: list[dict], server: dict | None = None) -> dict:
    return {"type": "welcome", "protocol": PROTOCOL_VERSION, "profiles": profiles,
            "server": server or {}}


def delta(sid: str, text: str, tokens: int) -> dict:
    return {"type": "delta", "id": sid, "text": text, "tokens": tokens}


def done(sid: str, reason: str, usage: dict, timing: dict, source: dict | None = None) -> dict:
    frame = {"type": "done", "id": sid, "reason": reason, "usage": usage, "timing": timing}
    if source is not None:
        frame["source"] = source
    return frame


def error(sid: str | None, code: str, message: str, **extra: Any) -> dict:
    """An error frame; secrets the core holds (API keys, token) are blanked from the text."""
    from core.auth import redact

    return {"type": "error", "id": sid, "code": code, "message": redact(message), **extra}


def info(sid: str, event: str, **fields: Any) -> dict:
    return {"type": "info", "id": sid, "event": event, **fields}


def pong(data: Any, server_time: float) -> dict:
    return {"type": "pong", "data": data, "server_time": server_time}


def encode(frame: dict) -> str:
    """Serialise a frame compactly (frames are small and many)."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
