"""Server frames are typed in core.protocol: what the server builds, the client parses back
to the same values; anything else is refused whole with a ProtocolError, never half-read."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import protocol as P

ids = st.text(min_size=1, max_size=20)
texts = st.text(max_size=200)
json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20)
small_dicts = st.dictionaries(st.text(min_size=1, max_size=10), json_scalars, max_size=4)


@given(ids, texts, st.integers(0, 10**6))
def test_delta_round_trip(sid, text, tokens):
    assert P.parse_server_frame(P.encode(P.delta(sid, text, tokens))) == P.Delta(sid, text, tokens)


@given(ids, st.sampled_from(P.DONE_REASONS), small_dicts, small_dicts, st.none() | small_dicts)
def test_done_round_trip(sid, reason, usage, timing, source):
    frame = P.parse_server_frame(P.encode(P.done(sid, reason, usage, timing, source)))
    assert frame == P.Done(sid, reason, usage, timing, source or {})


@given(ids, st.text(min_size=1, max_size=20), small_dicts)
def test_info_round_trip(sid, event, fields):
    fields = {k: v for k, v in fields.items() if k not in ("type", "id", "event")}
    assert P.parse_server_frame(P.encode(P.info(sid, event, **fields))) == P.Info(sid, event, fields)


def test_error_welcome_and_pong_round_trip():
    err = P.parse_server_frame(P.encode(P.error("s1", P.E_RATE_LIMITED, "slow down", retry_after_s=2)))
    assert err == P.ErrorFrame("s1", P.E_RATE_LIMITED, "slow down", {"retry_after_s": 2})
    assert P.parse_server_frame(P.encode(P.error(None, P.E_INVALID_JSON, "bad"))).id is None
    welcome = P.parse_server_frame(P.encode(P.welcome([{"name": "spark"}], {"version": "1"})))
    assert welcome == P.Welcome(P.PROTOCOL_VERSION, [{"name": "spark"}], {"version": "1"})
    assert P.parse_server_frame(P.encode(P.pong(7, 12.5))) == P.Pong(7, 12.5)


@pytest.mark.parametrize("frame", [
    {"type": "delta", "id": "s", "text": 5, "tokens": 1},
    {"type": "delta", "id": "s", "tokens": 1},
    {"type": "delta", "id": "s", "text": "x", "tokens": -1},
    {"type": "delta", "id": "s", "text": "x", "tokens": True},
    {"type": "delta", "text": "x", "tokens": 1},
    {"type": "done", "id": "s", "reason": "exploded", "usage": {}, "timing": {}},
    {"type": "done", "id": "s", "reason": "stop", "usage": [], "timing": {}},
    {"type": "info", "id": "s"},
    {"type": "error", "id": "s", "message": "no code"},
    {"type": "welcome", "protocol": "1", "profiles": []},
    {"type": "teleport", "id": "s"},
    [1, 2],
])
def test_malformed_server_frames_are_refused_whole(frame):
    with pytest.raises(P.ProtocolError):
        P.parse_server_frame(json.dumps(frame))


@given(st.binary(max_size=64) | st.text(max_size=64))
def test_parse_server_frame_never_raises_anything_else(raw):
    try:
        P.parse_server_frame(raw)
    except P.ProtocolError:
        pass
