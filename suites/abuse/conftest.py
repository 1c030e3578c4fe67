"""The abuse suite's shared helpers: a broker of its own per test, resource sampling, raw connections.

Every abuse test states a bound, measures, prints the figures (one line starting ``ABUSE``; run
with ``-s`` to see them) and asserts the bound on *local* targets, whose process this machine runs
(RSS and descriptors from /proc, :mod:`fixtures.resources`); a remote target gets the liveness
checks only. The helpers, for every test in this folder:

* ``abused`` (fixture): an :class:`AbusedTarget`, a fresh broker for each test when the harness can
  launch one (``reference``, ``tansu``, ``noida``: an abuse test must not leave the next one a
  damaged broker), else the run's target. The reference is launched with :data:`REFERENCE_CONFIGS`
  (short idle and receive timeouts, a low ``max.connections``) and then the run's broker configs
  (``--broker-config``, e.g. ``reference.defects=unbounded-buffering``:
  :meth:`TargetSession.launch_fresh`), so each check can be shown to catch its bug.
* :class:`ResourceWatch`: ``with ResourceWatch(abused) as watch:`` samples the target's RSS and
  open descriptors every 50 ms in a thread; ``rss_growth_mib`` and ``fds_peak`` after.
* :func:`answered_within`: a fresh client's ApiVersions answered within a hang bound (seconds taken,
  or None): the liveness probe.
* :class:`Flood`: sockets that pipeline the same frames without reading, from one thread, bounded
  in bytes and time; :func:`flooding` watches the target's resources while one runs.
* :func:`frame_of`, :func:`report`, :func:`assert_local_bound`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from fixtures.targets import (
    SINGLE_BROKER_KINDS,
    PeakTracker,
    ProcessSample,
    Target,
    TargetSession,
    TargetUnavailableError,
)
from fixtures.wire import Capabilities, WireClient, build_request
from fixtures.wire.ops import ensure_topic
from reference_impl.protocol.codec import encode_request

HANG_S = 10.0
"""The liveness bound: a well-behaved request unanswered this long counts as a hang (the fixed
reference answers within milliseconds; the defects these tests catch starve it for 20 s or more)."""
REFERENCE_IDLE_MS = 3_000
REFERENCE_RECEIVE_TIMEOUT_MS = 3_000
REFERENCE_MAX_CONNECTIONS = 400
REFERENCE_CONFIGS = {
    "connections.max.idle.ms": str(REFERENCE_IDLE_MS),
    "reference.request.receive.timeout.ms": str(REFERENCE_RECEIVE_TIMEOUT_MS),
    "max.connections": str(REFERENCE_MAX_CONNECTIONS),
}
"""What the abuse tests launch the reference with: timeouts short enough to wait for in a test."""
LAUNCHED_KINDS = ("reference", *SINGLE_BROKER_KINDS)


@dataclass
class AbusedTarget:
    """The broker one abuse test attacks."""

    name: str
    address: str
    pid: int | None
    """The broker's process when this machine runs it (its resources are measured), else None."""
    configured: dict[str, str] = field(default_factory=dict)
    """The configs the harness launched it with (the reference only; empty: the target's own)."""
    _clients: list[WireClient] = field(default_factory=list)
    _caps: Capabilities | None = None

    @property
    def local(self) -> bool:
        return self.pid is not None

    def wire(self, timeout_s: float = HANG_S) -> WireClient:
        """A well-behaved raw client (closed after the test)."""
        client = WireClient(self.address, timeout_s=timeout_s)
        self._clients.append(client)
        return client

    @property
    def caps(self) -> Capabilities:
        if self._caps is None:
            self._caps = Capabilities(self.wire().api_versions())
        return self._caps

    def topic(self, name: str, partitions: int = 1) -> str:
        ensure_topic(self.wire(), self.caps, name, partitions)
        return name

    def configured_ms(self, name: str) -> int | None:
        """A timeout the harness set on this target, or None when the target's own applies."""
        value = self.configured.get(name)
        return int(value) if value is not None else None

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture
def abused(target_session: TargetSession, request: pytest.FixtureRequest) -> Iterator[AbusedTarget]:
    with abused_target(target_session, request) as target:
        yield target


@contextlib.contextmanager
def abused_target(
    target_session: TargetSession, request: pytest.FixtureRequest, extra_configs: dict[str, str] | None = None
) -> Iterator[AbusedTarget]:
    """What the ``abused`` fixture yields; a reference broker gets ``extra_configs`` after
    :data:`REFERENCE_CONFIGS` (and before the run's own), for a test that needs a shorter period."""
    kind = target_session.spec.kind
    launched: Target | None = None
    if kind in LAUNCHED_KINDS:
        ours = [f"{k}={v}" for k, v in {**REFERENCE_CONFIGS, **(extra_configs or {})}.items()]
        try:
            launched = target_session.launch_fresh(ours)
        except TargetUnavailableError as exc:
            pytest.skip(f"target unavailable: {exc}")
        node = launched.nodes[0]
        configs = [*ours, *target_session.broker_configs] if kind == "reference" else []
        configured = dict(c.split("=", 1) for c in configs)
        abused = AbusedTarget(kind, launched.bootstrap_servers.split(",")[0], node.pid, configured)
    else:
        target: Target = request.getfixturevalue("target")
        abused = AbusedTarget(kind, target.bootstrap_servers.split(",")[0], None)
    try:
        yield abused
    finally:
        abused.close()
        if launched is not None:
            launched.close()


class ResourceWatch:
    """Samples a local target's RSS and descriptors every ``interval_s`` while the block runs."""

    def __init__(self, abused: AbusedTarget, interval_s: float = 0.05) -> None:
        self.tracker = PeakTracker(abused.pid) if abused.pid is not None else None
        self.interval_s = interval_s
        self.baseline: ProcessSample | None = None
        self.last: ProcessSample | None = None
        self.threads_peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        assert self.tracker is not None
        while not self._stop.is_set():
            self._observe()
            self._stop.wait(self.interval_s)

    def _observe(self) -> None:
        assert self.tracker is not None
        reading = self.tracker.observe()
        if reading is not None:
            self.last = reading
            self.threads_peak = max(self.threads_peak or 0, reading.threads)

    def __enter__(self) -> ResourceWatch:
        if self.tracker is not None:
            self.baseline = self.tracker.observe()
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tracker is not None:
            self._stop.set()
            self._thread.join()
            self._observe()

    @property
    def rss_growth_mib(self) -> float | None:
        if self.tracker is None or self.baseline is None:
            return None
        return (self.tracker.rss_peak_bytes - self.baseline.rss_bytes) / (1 << 20)

    @property
    def fds_peak(self) -> int | None:
        return self.tracker.fds_peak if self.tracker is not None else None

    @property
    def fds_baseline(self) -> int | None:
        return self.baseline.open_fds if self.baseline is not None else None


def frame_of(api: str, version: int, correlation_id: int = 1, **fields: Any) -> bytes:
    """A whole request frame (size prefix included) from plain fields (schema defaults elsewhere)."""
    return encode_request(build_request(api, version, fields), correlation_id, "kh-abuse")


def answered_within(abused: AbusedTarget, hang_s: float = HANG_S) -> float | None:
    """Seconds a fresh connection's ApiVersions took to be answered; None if it was not within
    ``hang_s`` (refused, closed, or no answer)."""
    started = time.monotonic()
    try:
        with WireClient(abused.address, timeout_s=hang_s) as client:
            client.request("api_versions", 0)
    except (OSError, RuntimeError):
        return None
    return time.monotonic() - started


def report(test: str, **figures: Any) -> None:
    """The figures line of one test (collected into suites/abuse/README.md by hand)."""
    shown = " ".join(f"{k}={_show(v)}" for k, v in figures.items())
    print(f"\nABUSE {test}: {shown}")


def _show(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def assert_local_bound(abused: AbusedTarget, value: float | None, bound: float, what: str) -> None:
    """``value`` ≤ ``bound`` on a local target (a remote one cannot be measured)."""
    if not abused.local:
        return
    assert value is not None, f"{what}: the target's process could not be sampled"
    assert value <= bound, f"{what} {value:.1f} is over its bound {bound}"


class Flood:
    """``count`` connections that each send ``frame`` over and over without reading an answer, from
    one thread once started (:meth:`start`), until ``total_bytes`` have gone, ``budget_s`` has passed, or
    :meth:`stop`. A socket the target stops reading (TCP pushes back) simply stops taking bytes.
    ``with`` closes every socket at the end."""

    def __init__(self, address: str, frame: bytes, *, count: int, total_bytes: int, budget_s: float) -> None:
        host, _, port = address.rpartition(":")
        repeat = max(1, (64 << 10) // len(frame))
        self._chunk = frame * repeat
        self.total_bytes = total_bytes
        self.budget_s = budget_s
        self.sockets: list[socket.socket] = []
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=HANG_S)
            sock.setblocking(False)
            self.sockets.append(sock)
        self.sent = 0
        self.closed_by_target = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        offsets = [0] * len(self.sockets)
        alive = list(range(len(self.sockets)))
        deadline = time.monotonic() + self.budget_s
        chunk = memoryview(self._chunk)
        while alive and not self._stop.is_set() and self.sent < self.total_bytes:
            if time.monotonic() > deadline:
                break
            progressed = False
            for index in list(alive):
                try:
                    n = self.sockets[index].send(chunk[offsets[index] :])
                except BlockingIOError:
                    continue
                except OSError:
                    alive.remove(index)
                    self.closed_by_target += 1
                    continue
                progressed = True
                self.sent += n
                offsets[index] = (offsets[index] + n) % len(self._chunk)
            if not progressed:
                self._stop.wait(0.01)

    def start(self) -> Flood:
        self._thread.start()
        return self

    def wait(self) -> None:
        """Until the bytes or the time are spent (or every socket was closed by the target)."""
        self._thread.join()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join()

    def close(self) -> None:
        self.stop()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> Flood:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def flooding(
    abused: AbusedTarget, frame: bytes, *, count: int, budget_s: float, total_bytes: int = 1 << 40
) -> Iterator[tuple[ResourceWatch, Flood]]:
    """A :class:`Flood` (not yet started) of ``abused`` and a :class:`ResourceWatch` over it; the
    sockets are closed and the sampling stopped at the end."""
    with (
        ResourceWatch(abused) as watch,
        Flood(abused.address, frame, count=count, total_bytes=total_bytes, budget_s=budget_s) as flood,
    ):
        yield watch, flood
