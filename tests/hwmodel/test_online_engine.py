"""Online calibration through the real core: a live profile's answers refit its forecast,
the `done` frame carries it, and the client's profile list (the race's forecast) follows."""

from __future__ import annotations

from core.client import CoreClient
from core.engine import Engine
from core.profiles import load_config
from core.server import CoreServer
from hwmodel.online import CalibrationStore
from tests.fakes.core import write_config
from tests.fakes.openai_server import FakeOpenAI, Reply

USER = [{"role": "user", "content": "add a docstring"}]


async def test_live_answers_calibrate_the_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k")
    with FakeOpenAI() as fake:
        extra = (f'[profiles.live]\nbackend = "openai"\nbase_url = "{fake.url}"\n'
                 'api_model = "fake-model"\napi_key_env = "FAKE_KEY"\n'
                 'chip = "cs-3"\nmodel = "llama-3.1-8b"\n')
        config = load_config(config_file=write_config(tmp_path, extra=extra), env={"FAKE_KEY": "k"})
        store = CalibrationStore(tmp_path / "state")
        engine = Engine(config, package_cassettes=False, calibration=store)
        server = CoreServer(engine, host="127.0.0.1", port=0)
        url = await server.start()
        client = await CoreClient.connect(url)
        try:
            assert client.profile("live")["predicted"]["basis"] == "hwmodel"  # nothing learned
            dones = []
            for _ in range(4):
                fake.script.append(Reply.text("one two three four five six", ttft_s=0.05,
                                              delay_s=0.003,
                                              usage={"prompt_tokens": 40, "completion_tokens": 6}))
                stream = await client.generate("live", USER)
                async for _ in stream:
                    pass
                dones.append(stream.done)
            # pinned replay profiles never learn from themselves
            stream = await client.generate("fast", USER)
            async for _ in stream:
                pass
            assert "calibrated" not in stream.done.timing
        finally:
            await client.close()
            await server.stop()
    assert "calibrated" not in dones[1].timing  # 2 answers: too few
    third, fourth = dones[2].timing, dones[3].timing
    assert third["calibrated"]["answers"] == 3 and third["calibrated"]["basis"] == "online"
    assert fourth["predicted"]["basis"] == "online"  # the 4th was forecast from the first 3
    assert fourth["predicted"]["hwmodel"]["basis"] == "hwmodel"  # the spec figure stays shown
    assert dones[0].timing["predicted"]["basis"] == "hwmodel"
    measured = fourth["ttft_ms"]
    assert abs(fourth["predicted"]["ttft_ms"] - measured) / measured < 0.5
    assert client.profile("live")["predicted"]["answers"] == 4
    # persisted: a new core starts from what was learned
    again = Engine(config, package_cassettes=False, calibration=CalibrationStore(tmp_path / "state"))
    listed = {p["name"]: p for p in again.profile_list()}
    assert listed["live"]["predicted"]["basis"] == "online"
    assert listed["live"]["predicted"]["answers"] == 4


def test_replay_matches_the_typed_request_not_the_feedback():
    """After a rejection the app puts its feedback in front of the user's text; the replay
    must still pick the recording for what the user typed."""
    from core.backends.replay import Cassette, CassetteLibrary

    def cassette(i: str, text: str) -> Cassette:
        return Cassette(file=__import__("pathlib").Path("x.jsonl"), id=i, title="",
                        messages=[{"role": "user", "content": text}], answer=i)

    lib = CassetteLibrary([cassette("docstrings", "add docstrings to the report module"),
                           cassette("tests", "the previous answer was rejected: the tests "
                                             "fail, write tests first")])
    feedback = [{"role": "user", "content": "The previous answer was rejected: the tests "
                 "fail. Write tests first.\n\nadd docstrings to the report module"}]
    assert lib.match(feedback)[0].id == "tests"  # what the old matching picked
    best, score = lib.match(feedback, request="add docstrings to the report module")
    assert best.id == "docstrings" and score == 1.0
