"""Protocol v1 frame validation: every bad frame becomes a ProtocolError with a code."""

import json

import pytest

from core import protocol as P


def test_generate_roundtrip():
    frame = P.parse_client_frame(json.dumps({
        "type": "generate", "id": "a1", "profile": "spark",
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}))
    assert frame == P.Generate("a1", "spark", [{"role": "user", "content": "hi"}], 5)


@pytest.mark.parametrize("raw, code", [
    ("{not json", P.E_INVALID_JSON),
    ("[1, 2]", P.E_INVALID_JSON),
    ('{"type": "launch"}', P.E_UNKNOWN_TYPE),
    ('{"type": 3}', P.E_INVALID_FIELD),
    ('{"type": "hello"}', P.E_INVALID_FIELD),
    ('{"type": "hello", "protocol": "1"}', P.E_INVALID_FIELD),
    ('{"type": "generate", "profile": "spark", "messages": []}', P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "messages": [{"role":"user","content":"a"}]}',
     P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "profile": "s", "messages": []}', P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "profile": "s", "messages": [{"role":"boss","content":"a"}]}',
     P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "profile": "s", "messages": [{"role":"user","content":1}]}',
     P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "profile": "s", "messages": [{"role":"user","content":"a"}],'
     ' "max_tokens": true}', P.E_INVALID_FIELD),
    ('{"type": "generate", "id": "x", "profile": "s", "messages": [{"role":"user","content":"a"}],'
     ' "max_tokens": 0}', P.E_INVALID_FIELD),
    ('{"type": "steer", "id": "x"}', P.E_INVALID_FIELD),
    ('{"type": "cancel", "id": ""}', P.E_INVALID_FIELD),
])
def test_bad_frames_have_codes(raw, code):
    with pytest.raises(P.ProtocolError) as exc:
        P.parse_client_frame(raw)
    assert exc.value.code == code


def test_error_keeps_the_stream_id_when_readable():
    with pytest.raises(P.ProtocolError) as exc:
        P.parse_client_frame('{"type": "steer", "id": "s9", "text": 4}')
    assert exc.value.stream_id == "s9"


def test_oversized_frame():
    raw = json.dumps({"type": "ping", "data": "x" * (P.MAX_FRAME_BYTES + 1)})
    with pytest.raises(P.ProtocolError) as exc:
        P.parse_client_frame(raw)
    assert exc.value.code == P.E_FRAME_TOO_LARGE
