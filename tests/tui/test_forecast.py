"""The status bar shows the live profile's forecast beside the measurement, and the gap."""

from __future__ import annotations

from tests.fakes.openai_server import Reply
from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.widgets.status import StatusBar


async def test_forecast_turns_online_and_shows_the_gap(demo_root, fake_model, fake_core_url):
    fake, _ = fake_model
    fake.default = Reply.text("Nothing to change here.", ttft_s=0.03, delay_s=0.002)
    app = SparkApp(demo_root, fake_core_url)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        status = app.query_one(StatusBar)
        shown = []
        for i in range(4):
            prompt = f"say hello number {i}"
            app.query_one("#prompt").value = prompt
            await pilot.click("#prompt")
            await pilot.press("enter")
            await wait_for(pilot, lambda p=prompt: app.answer is not None
                           and app.answer.prompt == p and app.settled, what=f"answer {i}")
            await pilot.pause(0.05)
            shown.append(status.forecast)
        text = str(status.render())
    assert shown[0] == ""  # no chip/model and nothing learned: no forecast to compare with
    assert shown[3].startswith("pred ") and "(fit 3)" in shown[3], shown
    assert "%" in shown[3] and shown[3] in text
