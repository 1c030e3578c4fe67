"""Sending the cases: many connections at once, each outcome classified, the target watched.

Why many connections with one request in flight each: Kafka reads a connection's next request
only after answering the previous one (``SocketServer`` mutes the channel,
``core/src/main/scala/kafka/network/SocketServer.scala``), so pipelining on one connection buys
nothing, and a request that closes the connection would take the ones queued behind it along,
leaving their outcomes unknown. One request at a time per connection keeps every outcome
attributable; ``concurrency`` connections keep the target busy.

The target is watched three ways: after every close, the worker's next connection is opened with
a liveness probe (ApiVersions v0 on a fresh connection); every ``probe_every`` requests a probe
runs on its own; and, for a local target, its process is polled and its resident memory and open
descriptors sampled from ``/proc``. When the target has died (process gone, or no fresh
connection answered twice), every request then in flight is a candidate for the cause; a local
target is restarted and the run goes on (the durability canary is read back first), an attached
one ends the run.

Every loop here is bounded: by the request count, by the run's deadline, and each wait by the
hang bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .classify import CLOSED, DIED, HANG, SILENT, UNDECODABLE, Outcome, check_answer, expected_silence
from .plan import Case, CasePlan
from .target import FuzzTarget, probe

_I32 = struct.Struct(">i")
MAX_ANSWER = 64 << 20
"""An answer announcing more bytes than this is judged undecodable without being read."""
EXAMPLES = 3
"""Examples kept per (api, version, class)."""


class BadAnswerSize(ConnectionError):
    pass


@dataclass
class CrashEvent:
    """One death of the target, and the requests that were in flight when it happened."""

    at_request: int
    reason: str
    candidates: list[Case]
    lost_after: int | None = None


@dataclass
class Example:
    index: int
    kind: str
    detail: str
    outcome: str
    frame: bytes


@dataclass
class Stats:
    """Everything a run counted."""

    requests: int = 0
    wall_s: float = 0.0
    counts: dict[tuple[str, int], Counter[str]] = field(default_factory=dict)
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    crashes: list[CrashEvent] = field(default_factory=list)
    hangs: list[Case] = field(default_factory=list)
    examples: dict[tuple[str, int, str], list[Example]] = field(default_factory=dict)
    probes: int = 0
    outcomes: dict[int, str] = field(default_factory=dict)
    """Class per case index, when the run records them (a diff)."""
    lost: int = 0
    stopped: str | None = None
    fuzzer_cpu_s: float = 0.0

    def total(self, cls: str) -> int:
        return sum(c[cls] for c in self.counts.values())

    @property
    def rate(self) -> float:
        return self.requests / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    generation: int

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = _I32.unpack(await reader.readexactly(4))[0]
    if not 0 <= size <= MAX_ANSWER:
        raise BadAnswerSize(f"answer announces {size} bytes")
    return await reader.readexactly(size)


class Engine:
    """One run of ``plan`` against ``target``: ``requests`` cases at most, ``time_s`` at most."""

    def __init__(self, plan: CasePlan, target: FuzzTarget, *, requests: int, time_s: float,
                 concurrency: int = 16, hang_s: float = 5.0, probe_every: int = 1000, first_index: int = 0,
                 record_outcomes: bool = False, after_restart: Callable[[], int] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.plan = plan
        self.target = target
        self.requests = requests
        self.time_s = time_s
        self.concurrency = max(1, concurrency)
        self.hang_s = hang_s
        self.probe_every = max(1, probe_every)
        self.next = first_index
        self.end = first_index + requests
        self.record_outcomes = record_outcomes
        self.after_restart = after_restart
        self.progress = progress
        self.stats = Stats()
        self.generation = 0
        self.lock = asyncio.Lock()
        self.in_flight: dict[int, Case] = {}
        self.deadline = 0.0
        self.stop = False
        self.probes: set[asyncio.Task[None]] = set()

    # -- the run -----------------------------------------------------------------------------------

    async def run(self) -> Stats:
        started = time.monotonic()
        self.deadline = started + self.time_s
        watchers = [asyncio.create_task(self._sampler()), asyncio.create_task(self._reporter(started))]
        try:
            await asyncio.gather(*(self._worker(w) for w in range(self.concurrency)))
            if self.probes:  # the periodic probes still running judge the end of the run too
                await asyncio.gather(*self.probes)
        finally:
            for task in watchers:
                task.cancel()
            for task in watchers:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.stats.wall_s = time.monotonic() - started
        return self.stats

    def _take(self) -> int | None:
        if self.stop or self.next >= self.end or time.monotonic() >= self.deadline:
            return None
        index = self.next
        self.next += 1
        return index

    async def _worker(self, wid: int) -> None:
        conn: _Conn | None = None
        while (index := self._take()) is not None:
            case = self.plan.case(index)
            if conn is None or conn.generation != self.generation:
                if conn is not None:
                    conn.close()
                conn = await self._connect()
                if conn is None:
                    self._record(case, Outcome(DIED, "the target accepts no connection"))
                    continue
            gen = conn.generation
            self.in_flight[wid] = case
            try:
                outcome, conn = await self._exchange(case, conn, gen)
            finally:
                self.in_flight.pop(wid, None)
            self._record(case, outcome)
        if conn is not None:
            conn.close()

    async def _exchange(self, case: Case, conn: _Conn, gen: int) -> tuple[Outcome, _Conn | None]:
        try:
            conn.writer.write(case.frame)
            async with asyncio.timeout(self.hang_s):  # cheaper than wait_for: no task per request
                answer = await _read_frame(conn.reader)
        except TimeoutError:
            conn.close()
            return await self._after_silence(case, gen)
        except BadAnswerSize as exc:
            conn.close()
            return Outcome(UNDECODABLE, str(exc)), None
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            conn.close()
            return await self._after_close(gen)
        outcome = check_answer(case.frame, answer)
        if case.kind == "size":  # whatever followed the short frame is the start of another
            conn.close()
            return outcome, None
        return outcome, conn

    # -- liveness ----------------------------------------------------------------------------------

    async def _connect(self) -> _Conn | None:
        """A fresh connection, opened with a liveness probe; on failure, the death is handled."""
        gen = self.generation
        pair = await probe(self.target.host, self.target.port, self.hang_s, self.target.security)
        self.stats.probes += 1
        if pair is not None:
            return _Conn(pair[0], pair[1], gen)
        await self._suspect(gen, "a fresh connection got no answer")
        if self.stop:
            return None
        pair = await probe(self.target.host, self.target.port, self.hang_s, self.target.security)
        return None if pair is None else _Conn(pair[0], pair[1], self.generation)

    async def _after_close(self, gen: int) -> tuple[Outcome, _Conn | None]:
        return await self._judge(gen, Outcome(CLOSED), "closed")

    async def _after_silence(self, case: Case, gen: int) -> tuple[Outcome, _Conn | None]:
        reason = expected_silence(case.frame, self.hang_s * 1000)
        if reason is not None:
            return Outcome(SILENT, reason), None
        hang = Outcome(HANG, f"no answer and no close in {self.hang_s:g} s; a fresh connection is answered")
        return await self._judge(gen, hang, "silent")

    async def _judge(self, gen: int, alive: Outcome, what: str) -> tuple[Outcome, _Conn | None]:
        """``alive`` if the target still answers a fresh connection (which the worker then keeps),
        else ``died``; a request in flight when another worker saw the target die died with it."""
        in_flight = Outcome(DIED, "in flight when the target died")
        if self.generation != gen:
            return in_flight, None
        if self.target.process_alive() is not False:
            pair = await probe(self.target.host, self.target.port, self.hang_s, self.target.security)
            self.stats.probes += 1
            if pair is not None:
                if self.generation != gen:
                    return in_flight, _Conn(*pair, self.generation)
                return alive, _Conn(*pair, gen)
        if await self._suspect(gen, f"{what}, then no answer to a fresh connection"):
            return Outcome(DIED, "the target died"), None
        return alive, None

    async def _suspect(self, gen: int, reason: str) -> bool:
        """Confirm a death (process gone, or two more probes unanswered) and recover from it.
        Returns whether the target died during generation ``gen``."""
        async with self.lock:
            if self.generation != gen:
                return True
            alive = self.target.process_alive()
            if alive is not False:
                for _ in range(2):
                    pair = await probe(self.target.host, self.target.port, self.hang_s, self.target.security)
                    self.stats.probes += 1
                    if pair is not None:
                        pair[1].close()
                        return False
                    await asyncio.sleep(0.2)
                reason += "; the process is still there" if alive else ""
            else:
                reason = "the process exited" + self._exit_status()
            event = CrashEvent(self.stats.requests, reason, list(self.in_flight.values()))
            self.stats.crashes.append(event)
            self._say(f"target died at request {self.stats.requests}: {reason}; "
                      f"{len(event.candidates)} request(s) in flight")
            if not self.target.local:
                self.stop = True
                self.stats.stopped = "the target died and is not launched here"
                return True
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(None, self.target.restart)
            except Exception as exc:
                self.stop = True
                self.stats.stopped = f"the target could not be restarted: {exc}"
                return True
            if self.after_restart is not None:
                event.lost_after = await loop.run_in_executor(None, self.after_restart)
                self.stats.lost = max(self.stats.lost, event.lost_after)
            self.generation += 1
            return True

    def _exit_status(self) -> str:
        node = self.target.node
        if node is None or node.process is None:
            return ""
        return f" with status {node.process.returncode}"

    async def _periodic_probe(self) -> None:
        gen = self.generation
        pair = await probe(self.target.host, self.target.port, self.hang_s, self.target.security)
        self.stats.probes += 1
        if pair is not None:
            pair[1].close()
            return
        await self._suspect(gen, "the periodic probe got no answer")

    async def _sampler(self) -> None:
        while True:
            self.target.sample()
            await asyncio.sleep(0.25)

    async def _reporter(self, started: float) -> None:
        while True:
            await asyncio.sleep(10)
            s = self.stats
            elapsed = time.monotonic() - started
            self._say(f"{s.requests} requests in {elapsed:.0f} s ({s.requests / elapsed:.0f}/s); "
                      f"crashes={len(s.crashes)} hangs={s.total(HANG)} closed={s.total(CLOSED)} "
                      f"undecodable={s.total(UNDECODABLE)} rss_peak_mb={self.target.rss_peak_mb:.0f} "
                      f"fds_peak={self.target.fds_peak}")

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    # -- bookkeeping -------------------------------------------------------------------------------

    def _record(self, case: Case, outcome: Outcome) -> None:
        s = self.stats
        s.requests += 1
        key = (case.api, case.version)
        s.counts.setdefault(key, Counter())[outcome.cls] += 1
        s.by_kind.setdefault(case.kind, Counter())[outcome.cls] += 1
        if self.record_outcomes:
            s.outcomes[case.index] = outcome.cls
        if outcome.cls == HANG and len(s.hangs) < 1000:
            s.hangs.append(case)
        if outcome.cls not in ("decode_ok", "closed", "answered"):
            bucket = s.examples.setdefault((case.api, case.version, outcome.cls), [])
            if len(bucket) < EXAMPLES:
                bucket.append(Example(case.index, case.kind, f"{case.detail} -> {outcome.detail}".strip(),
                                      outcome.cls, case.frame))
        if s.requests % self.probe_every == 0:
            task = asyncio.get_running_loop().create_task(self._periodic_probe())
            self.probes.add(task)
            task.add_done_callback(self.probes.discard)
