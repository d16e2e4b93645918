"""The request engine: runs one stream per `generate`, paces it, frames it, measures it.

Backends say where tokens come from; the engine decides when they leave. For a paced
backend (replay) tokens leave on the schedule hwmodel predicts for the profile's chip
and model: the first after TTFT, then one every 1/rate seconds, where the rate is the
per-sequence rate at the current batch (the number of streams decoding on that profile
right now, so aggregate goes up and per-stream goes down as streams are added). Tokens
are grouped into `delta` frames at most every `frame_ms` (16 ms: one frame per 60 Hz
screen refresh) instead of one message per token.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import protocol as P
from core.backends.base import Backend, BackendError, BackendRequest, BackendStream
from core.backends.tokens import count_message_tokens, count_tokens
from core.profiles import CoreConfig, Profile

log = logging.getLogger(__name__)
Emit = Callable[[dict], Awaitable[None]]
NOMINAL_PROMPT_TOKENS = 1000  # prompt size behind welcome.profiles[].predicted
PACING_UNAVAILABLE = "pacing_unavailable"
MAX_PENDING_STEERS = 8  # steers waiting for their leg to start, per stream


@dataclass(frozen=True)
class Rates:
    ttft_ms: float
    tokens_per_s: float  # per sequence
    basis: str           # "hwmodel" | "pinned"


class RateModel:
    """TTFT and per-sequence tokens/s for a profile at a batch size, cached.

    Uses ``hwmodel.predict.predict`` when the profile names a chip and model and pacing is
    "model"; falls back to the profile's pinned ``ttft_ms``/``tokens_per_s`` when hwmodel
    is missing or cannot answer (pinned rates do not change with batch).
    """

    def __init__(self, predict_fn: Callable[..., Any] | None = None,
                 calibration: Any = None) -> None:
        self._predict_fn = predict_fn
        self._cache: dict[tuple, Rates] = {}
        # hwmodel.online.CalibrationStore: a live profile's own answers, once there are
        # enough of them, predict its next one better than any spec sheet (hwmodel/online.py)
        self.calibration = calibration

    @staticmethod
    def calibration_key(profile: Profile) -> str:
        from hwmodel.online import profile_key

        return profile_key(profile.name, profile.base_url, profile.api_model or profile.model)

    def online(self, profile: Profile, prompt_tokens: int = NOMINAL_PROMPT_TOKENS,
               cached_tokens: int = 0) -> Any:
        """The online prediction for a live profile, or None (too few answers, or paced)."""
        if self.calibration is None or profile.backend != "openai":
            return None
        model = self.calibration.model(self.calibration_key(profile))
        return model.predict(prompt_tokens, cached_tokens)

    def observe(self, profile: Profile, result: LegResult, cached_tokens: int = 0) -> Any:
        """Learn from one finished live answer; returns the updated online prediction."""
        if self.calibration is None or profile.backend != "openai" or result.ttft_ms is None:
            return None
        from hwmodel.online import Observation

        model = self.calibration.observe(self.calibration_key(profile), Observation(
            result.prompt_tokens, result.ttft_ms, result.tokens_per_s,
            result.completion_tokens, cached_tokens, time.time()))
        return model.predict(NOMINAL_PROMPT_TOKENS)

    def _predictor(self) -> Callable[..., Any] | None:
        if self._predict_fn is None:
            try:
                from hwmodel.predict import predict
            except Exception:  # hwmodel absent or broken: pinned rates still work
                return None
            self._predict_fn = predict
        return self._predict_fn

    def rates(self, profile: Profile, *, batch: int = 1, prompt_tokens: int = 0) -> Rates:
        online = self.online(profile, prompt_tokens) if batch == 1 else None
        if online is not None and online.tokens_per_s:
            return Rates(online.ttft_ms, online.tokens_per_s, "online")
        return self.spec(profile, batch=batch, prompt_tokens=prompt_tokens)

    def spec(self, profile: Profile, *, batch: int = 1, prompt_tokens: int = 0) -> Rates:
        """hwmodel's (or the pinned) rates, whatever the profile has learned online."""
        bucket = 256 * math.ceil(max(prompt_tokens, 1) / 256)
        key = (profile.name, max(batch, 1), bucket)  # profiles are fixed per engine
        cached = self._cache.get(key)
        if cached is None:
            cached = self._compute(profile, max(batch, 1), bucket)
            self._cache[key] = cached
        return cached

    def _compute(self, profile: Profile, batch: int, prompt: int) -> Rates:
        if profile.pacing == "model" and profile.chip and profile.model:
            predict = self._predictor()
            if predict is not None:
                kwargs: dict[str, Any] = {"ctx": prompt, "prompt": prompt}
                if profile.precision:
                    kwargs["precision"] = profile.precision
                try:
                    if batch > 1:  # same hardware as one stream gets, more streams on it
                        single = predict(profile.chip, profile.model, batch=1, **kwargs)
                        if isinstance(getattr(single, "chips", None), int):
                            kwargs["chips"] = single.chips
                    result = predict(profile.chip, profile.model, batch=batch, **kwargs)
                    ttft, tps = float(result.ttft_ms), float(result.tokens_per_s_per_seq)
                    if ttft >= 0 and tps > 0 and math.isfinite(ttft) and math.isfinite(tps):
                        return Rates(ttft, tps, "hwmodel")
                except Exception as exc:  # any hwmodel failure falls back, once per key
                    log.info("hwmodel cannot predict %s/%s: %s", profile.chip, profile.model, exc)
        if profile.tokens_per_s is not None:
            return Rates(profile.ttft_ms if profile.ttft_ms is not None else 0.0,
                         profile.tokens_per_s, "pinned")
        raise BackendError(PACING_UNAVAILABLE,
                           f"profile '{profile.name}': hwmodel cannot predict "
                           f"{profile.chip}/{profile.model} and no tokens_per_s is pinned")

    def predicted(self, profile: Profile) -> dict[str, Any]:
        try:
            r = self.rates(profile, batch=1, prompt_tokens=NOMINAL_PROMPT_TOKENS)
        except BackendError:
            return {"ttft_ms": None, "tokens_per_s": None}
        out: dict[str, Any] = {"ttft_ms": round(r.ttft_ms, 2),
                               "tokens_per_s": round(r.tokens_per_s, 2), "basis": r.basis}
        online = self.online(profile)
        if online is not None and r.basis == "online":
            out["answers"] = online.answers
        return out


@dataclass
class LegResult:
    reason: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    ttft_ms: float | None
    tokens_per_s: float | None
    source: dict[str, Any]
    predicted: dict[str, Any] | None
    upstream: dict[str, Any] | None
    calibrated: dict[str, Any] | None = None  # the profile's online prediction after this


class StreamJob:
    """One `generate` id: legs of generation (a steer starts a new leg), then `done`."""

    def __init__(self, engine: Engine, gen: P.Generate, emit: Emit) -> None:
        self.engine = engine
        self.gen = gen
        self.profile = engine.config.profiles[gen.profile]
        self.emit = emit
        self.task: asyncio.Task | None = None
        self._steers: asyncio.Queue[str] = asyncio.Queue()
        self._partial: list[str] = []
        self._client_cancelled = False
        self._started = False
        self._steer_count = 0
        self.tokens_sent = 0  # across legs; for monitoring and tests
        # characters of conversation this stream holds (messages, answer so far, pending
        # steer): steers add to it, so the server caps it to keep memory bounded
        self.conversation_chars = sum(len(m["content"]) for m in gen.messages)

    def start(self) -> asyncio.Task:
        self.task = asyncio.get_running_loop().create_task(self.run(), name=self.gen.id)
        return self.task

    def cancel(self) -> None:
        """Client `cancel`: stop now and send `done` with reason `cancelled`.

        Idempotent: a second cancel while the first is tearing down (closing an upstream
        HTTP response takes a moment) must not interrupt the teardown and lose `done`.
        """
        if self._client_cancelled:
            return
        self._client_cancelled = True
        # a task cancelled before its first step never runs its handlers (no `done`
        # would be sent): before it starts, the flag alone is enough, `run` checks it
        if self.task is not None and self._started:
            self.task.cancel()

    def steer(self, text: str) -> bool:
        """Queue a redirect; False when `MAX_PENDING_STEERS` are already waiting (a few
        for type-ahead, but a steer flood must not queue megabytes of text)."""
        if self._steers.qsize() >= MAX_PENDING_STEERS:
            return False
        self._steers.put_nowait(text)
        self.conversation_chars += len(text)
        return True

    def answer_chars(self) -> int:
        """Characters of the current leg's answer so far."""
        return sum(map(len, self._partial))

    async def run(self) -> None:
        self._started = True
        messages = list(self.gen.messages)
        max_tokens = self.gen.max_tokens
        total_prompt = total_completion = 0
        leg: asyncio.Task | None = None
        steer_wait: asyncio.Task | None = None
        t_leg = time.perf_counter()
        try:
            if self._client_cancelled:  # cancelled before it started
                raise asyncio.CancelledError
            while True:
                self._partial = []
                leg = asyncio.create_task(self._leg(messages, max_tokens, t_leg))
                steer_wait = asyncio.create_task(self._steers.get())
                finished, _ = await asyncio.wait({leg, steer_wait},
                                                 return_when=asyncio.FIRST_COMPLETED)
                if leg in finished:
                    result = leg.result()  # BackendError propagates to the handler below
                    total_prompt += result.prompt_tokens
                    total_completion += result.completion_tokens
                    await self.emit(self._done(result.reason, total_prompt, total_completion,
                                               result))
                    return
                # steer: stop this leg, keep what was said, continue with the redirect
                text = steer_wait.result()
                leg.cancel()
                await asyncio.gather(leg, return_exceptions=True)
                partial = "".join(self._partial)
                total_prompt += count_message_tokens(messages)
                total_completion += count_tokens(partial)
                messages = messages + [{"role": "assistant", "content": partial},
                                       {"role": "user", "content": text}]
                self.conversation_chars += len(partial)
                if max_tokens is not None:
                    max_tokens = max(1, max_tokens - count_tokens(partial))
                self._steer_count += 1
                t_leg = time.perf_counter()
                await self.emit(P.info(self.gen.id, "steered", steer=self._steer_count,
                                       kept_tokens=count_tokens(partial)))
        except asyncio.CancelledError:
            if leg is not None:
                leg.cancel()
                await asyncio.gather(leg, return_exceptions=True)
            if not self._client_cancelled:
                raise  # connection closing: nobody to tell
            partial = "".join(self._partial)
            await self.emit(P.done(
                self.gen.id, "cancelled",
                {"prompt_tokens": total_prompt + count_message_tokens(messages),
                 "completion_tokens": total_completion + count_tokens(partial)},
                {"ttft_ms": None, "tokens_per_s": None}))
        except BackendError as exc:
            await self.emit(P.error(self.gen.id, exc.code, exc.message, **exc.extra))
        except Exception as exc:  # a bug must not take the connection down
            log.exception("stream %s failed", self.gen.id)
            await self.emit(P.error(self.gen.id, P.E_INTERNAL, f"internal error: {exc!r}"))
        finally:
            if steer_wait is not None:
                steer_wait.cancel()

    def _done(self, reason: str, prompt: int, completion: int, r: LegResult) -> dict:
        timing: dict[str, Any] = {"ttft_ms": _round(r.ttft_ms),
                                  "tokens_per_s": _round(r.tokens_per_s)}
        if r.predicted:
            timing["predicted"] = r.predicted
        if r.upstream:
            timing["upstream"] = r.upstream
        if r.calibrated:
            timing["calibrated"] = r.calibrated
        source = dict(r.source)
        if self._steer_count:
            source["steers"] = self._steer_count
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        return P.done(self.gen.id, reason, usage, timing, source)

    async def _leg(self, messages: list[dict[str, str]], max_tokens: int | None,
                   t_start: float) -> LegResult:
        backend = self.engine.backend(self.profile)
        # the typed request describes the first leg only; after a steer the steer text does
        typed = self.gen.request if self._steer_count == 0 else None
        request = BackendRequest(self.gen.id, messages, max_tokens, typed)
        stream = await backend.open(request)
        try:
            if stream.paced:
                return await self._paced(stream, messages, t_start)
            return await self._forwarded(stream, messages, t_start)
        finally:
            await stream.aclose()

    async def _say_source(self, stream: BackendStream) -> None:
        """Tell the app early where this answer comes from (cassette, endpoint)."""
        await self.emit(P.info(self.gen.id, "source", source=stream.source))

    async def _paced(self, stream: BackendStream, messages: list[dict[str, str]],
                     t_start: float) -> LegResult:
        engine, profile = self.engine, self.profile
        prompt_tokens = (stream.usage or {}).get("prompt_tokens") or count_message_tokens(messages)
        frame_s = engine.config.frame_ms / 1000.0
        engine.active[profile.name] = engine.active.get(profile.name, 0) + 1
        try:
            # TTFT is one prompt's prefill (a continuous-batching server prefills each new
            # request as it arrives); the decode rate below follows the live batch size.
            first_rates = engine.rates.rates(profile, batch=1, prompt_tokens=prompt_tokens)
            source_sent = first_rates.ttft_ms > 0
            if source_sent:  # free: said while TTFT runs; with no TTFT, after the first delta
                await self._say_source(stream)
            await _sleep_until(t_start + first_rates.ttft_ms / 1000.0, precise=True)
            pieces = stream.pieces().__aiter__()
            pending = await _next(pieces)
            total = (stream.usage or {}).get("completion_tokens")  # known for replay
            sent = 0
            due = 1.0
            t_last = t_first = t_sent = time.perf_counter()
            peak_batch, peak_rate = 1, first_rates.tokens_per_s
            while pending is not None:
                now = time.perf_counter()
                batch = engine.active[profile.name]
                # context grows as the answer does: decode slows a little on long answers
                rates = engine.rates.rates(profile, batch=batch,
                                           prompt_tokens=prompt_tokens + sent)
                if batch >= peak_batch:  # report the rate at the largest batch it shared
                    peak_batch, peak_rate = batch, rates.tokens_per_s
                if sent:
                    due += (now - t_last) * rates.tokens_per_s
                t_last = now
                n_due = min(int(due + 1e-9) - sent, engine.config.max_frame_tokens)
                chunk: list[str] = []
                while pending is not None and len(chunk) < n_due:
                    chunk.append(pending)
                    pending = await _next(pieces)
                if chunk:
                    if not sent:
                        t_first = now
                    text = "".join(chunk)
                    self._partial.append(text)
                    sent += len(chunk)
                    self.tokens_sent += len(chunk)
                    t_sent = now
                    await self.emit(P.delta(self.gen.id, text, len(chunk)))
                    if not source_sent:
                        source_sent = True
                        await self._say_source(stream)
                if pending is None:
                    break
                next_due = now + (sent + 1 - due) / rates.tokens_per_s
                wake, final = now + frame_s, False
                if total is not None:  # end on schedule: the final frame goes when its
                    # last token is due, even if that is sooner than frame_ms
                    t_final = now + (total - due) / rates.tokens_per_s
                    if t_final <= wake:
                        wake, final = t_final, True
                await _sleep_until(max(next_due, wake), precise=final)
        finally:
            engine.active[profile.name] -= 1
        ttft_ms = (t_first - t_start) * 1000.0 if sent else None
        tps = (sent - 1) / (t_sent - t_first) if sent > 1 and t_sent > t_first else None
        usage = stream.usage or {}
        predicted = {"ttft_ms": round(first_rates.ttft_ms, 3),
                     "tokens_per_s": round(peak_rate, 3), "basis": first_rates.basis,
                     "batch": peak_batch}
        return LegResult(stream.finish_reason or "stop", "".join(self._partial), prompt_tokens,
                         usage.get("completion_tokens", sent), ttft_ms, tps, stream.source,
                         predicted, None)

    async def _forwarded(self, stream: BackendStream, messages: list[dict[str, str]],
                         t_start: float) -> LegResult:
        """Live backend: forward pieces as they come, grouped into frames of `frame_ms`."""
        await self._say_source(stream)  # the endpoint is still thinking: this costs nothing
        frame_s = self.engine.config.frame_ms / 1000.0
        queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=256)  # bounded: backpressure
        failure: list[BaseException] = []

        async def pump() -> None:
            try:
                async for piece in stream.pieces():
                    if piece:
                        await queue.put(piece)
            except asyncio.CancelledError:
                raise  # the consumer is leaving: nobody reads the queue any more
            except Exception as exc:  # noqa: BLE001 - handed to the consumer below
                failure.append(exc)
            # not in a `finally`: a cancelled pump must not wait on a full queue that
            # nobody reads any more (that hung cancel/steer teardown under load)
            await queue.put(None)

        pump_task = asyncio.create_task(pump())
        buf: list[str] = []
        tokens_sent = 0
        t_first: float | None = None
        t_last_frame = 0.0
        t_sent = t_start
        ended = False
        try:
            while not ended:
                timeout = (None if not buf
                           else max(0.0, t_last_frame + frame_s - time.perf_counter()))
                try:
                    piece = await asyncio.wait_for(queue.get(), timeout)
                except TimeoutError:
                    piece = ""
                if piece is None:
                    ended = True
                elif piece:
                    buf.append(piece)
                now = time.perf_counter()
                if buf and (ended or t_first is None or now - t_last_frame >= frame_s):
                    text = "".join(buf)
                    buf = []
                    n = count_tokens(text)
                    if t_first is None:
                        t_first = now
                    self._partial.append(text)
                    tokens_sent += n
                    self.tokens_sent += n
                    t_last_frame = t_sent = now
                    await self.emit(P.delta(self.gen.id, text, n))
        finally:
            pump_task.cancel()
            await asyncio.gather(pump_task, return_exceptions=True)
        if failure:
            raise failure[0]
        usage = stream.usage or {}
        completion = usage.get("completion_tokens") or tokens_sent
        ttft_ms = (t_first - t_start) * 1000.0 if t_first is not None else None
        tps = (completion / (t_sent - t_first)
               if t_first is not None and t_sent > t_first else None)
        try:
            rates = self.engine.rates.rates(self.profile, batch=1,
                                            prompt_tokens=count_message_tokens(messages))
            predicted = {"ttft_ms": round(rates.ttft_ms, 2),
                         "tokens_per_s": round(rates.tokens_per_s, 2), "basis": rates.basis}
            online = self.engine.rates.online(self.profile) if rates.basis == "online" else None
            if online is not None:
                predicted["answers"] = online.answers
            if rates.basis == "online" and self.profile.chip and self.profile.model:
                # the spec sheet's figure too, so the gap to the measurement stays visible
                spec = self.engine.rates.spec(self.profile, batch=1,
                                              prompt_tokens=count_message_tokens(messages))
                predicted["hwmodel"] = {"ttft_ms": round(spec.ttft_ms, 2),
                                        "tokens_per_s": round(spec.tokens_per_s, 2),
                                        "basis": spec.basis}
        except BackendError:
            predicted = None
        source = dict(stream.source)
        if not usage.get("completion_tokens"):
            # the endpoint sent no usage (many ignore stream_options): counts are ours
            source["usage"] = "estimated"
        result = LegResult(stream.finish_reason or "stop", "".join(self._partial),
                           usage.get("prompt_tokens") or count_message_tokens(messages),
                           completion, ttft_ms, tps, source, predicted, stream.measured)
        if predicted is not None and usage.get("cached_tokens"):
            predicted["cached_tokens"] = usage["cached_tokens"]
        online = self.engine.rates.observe(self.profile, result, usage.get("cached_tokens", 0))
        if online is not None:
            result.calibrated = online.to_dict()
        if self.engine.recorder is not None:
            try:
                self.engine.recorder.record(messages, result.text,
                                            {"prompt_tokens": result.prompt_tokens,
                                             "completion_tokens": completion}, stream.source)
            except OSError as exc:  # a full disk must not cost the user the answer itself
                log.warning("could not record the answer to %s: %s",
                            self.engine.record_dir, exc)
                result.source = {**result.source, "recorded": False}
        return result


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


async def _next(it: Any) -> str | None:
    try:
        return await it.__anext__()
    except StopAsyncIteration:
        return None


SPIN_S = 0.002  # the event loop's timers round up to whole milliseconds (epoll)


async def _sleep_until(deadline: float, *, precise: bool = False) -> None:
    """Sleep until `deadline`; `precise` yields (never blocks) through the last 2 ms.

    Used for the first token and the final frame, where 1 ms of timer rounding would be
    a visible share of a short TTFT or answer; ordinary frames need no such care.
    """
    delay = deadline - time.perf_counter()
    if not precise:
        if delay > 0:
            await asyncio.sleep(delay)
        return
    if delay > SPIN_S:
        await asyncio.sleep(delay - SPIN_S)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


class Engine:
    """Profiles, their backends (created on first use) and the streams running on them."""

    def __init__(self, config: CoreConfig, *, record_dir: Path | None = None,
                 rate_model: RateModel | None = None,
                 package_cassettes: bool = False, calibration: Any = None) -> None:
        self.config = config
        self.package_cassettes = package_cassettes
        self.rates = rate_model or RateModel(calibration=calibration)
        self.active: dict[str, int] = {}
        self._backends: dict[str, Backend] = {}
        self.record_dir = Path(record_dir) if record_dir else None
        self.recorder = None
        if self.record_dir is not None:
            from core.backends.recorder import Recorder

            self.recorder = Recorder(self.record_dir)

    def warm(self) -> None:
        """Load cassettes and first predictions now, so the first answer's TTFT is honest."""
        for profile in self.config.profiles.values():
            if profile.backend == "replay":
                self.backend(profile)
            for bucket in (256, 1024, 4096):
                try:
                    self.rates.rates(profile, batch=1, prompt_tokens=bucket)
                except BackendError:
                    pass

    def profile_list(self) -> list[dict[str, Any]]:
        return [p.describe(self.rates.predicted(p)) for p in self.config.profiles.values()]

    def backend(self, profile: Profile) -> Backend:
        backend = self._backends.get(profile.name)
        if backend is None:
            if profile.backend == "replay":
                from core.backends.replay import PACKAGE_CASSETTES, ReplayBackend

                # recordings only where the profile names them (the demo's profiles do): a
                # user's project must never be answered from the demo's recordings
                folders = list(profile.cassettes)
                if not folders and self.package_cassettes:
                    folders.append(PACKAGE_CASSETTES)
                if self.record_dir is not None and self.record_dir.is_dir():
                    folders.append(self.record_dir)
                backend = ReplayBackend(folders)
            else:
                from core.backends.openai import OpenAIBackend

                backend = OpenAIBackend(profile)
            self._backends[profile.name] = backend
        return backend

    def job(self, gen: P.Generate, emit: Emit) -> StreamJob:
        return StreamJob(self, gen, emit)

    async def aclose(self) -> None:
        for backend in self._backends.values():
            await backend.aclose()
        self._backends.clear()
