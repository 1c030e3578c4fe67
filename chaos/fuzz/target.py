"""The target as the fuzzer sees it: an address, and for a local target its process.

Resolution goes through :func:`fixtures.targets.launch` like every other command (``reference``,
``tansu``, ``noida`` started here; ``bootstrap:HOST:PORT`` attached; a bare ``HOST:PORT`` is
taken as ``bootstrap:``). Only a local target can be restarted after a crash and have its
resident memory and file descriptors read from ``/proc``.
"""

from __future__ import annotations

import asyncio
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from fixtures.targets import Node, PeakTracker, Target, TargetUnavailableError, launch
from fixtures.wire import WireError
from fixtures.wire.security import ClientSecurity
from fixtures.wire.streams import authenticate_stream, open_stream
from reference_impl.protocol.codec import MalformedResponseError, decode_response

_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:\d+$")
_I32 = struct.Struct(">i")
PROBE_VERSION = 0
"""ApiVersions v0: every Kafka-compatible target answers it, whatever else it serves."""


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of ``pid`` (``/proc/PID/stat`` fields 14 and 15)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def normalise(spec: str) -> str:
    """``HOST:PORT`` → ``bootstrap:HOST:PORT``; other specs as they are."""
    return f"bootstrap:{spec}" if _HOST_PORT.match(spec) and not spec.startswith("bootstrap") else spec


def probe_frame(correlation_id: int = 0x7FFF0001) -> bytes:
    """ApiVersions v0, header v1, client id ``kh-fuzz-probe``."""
    client = b"kh-fuzz-probe"
    payload = struct.pack(">hhih", 18, PROBE_VERSION, correlation_id, len(client)) + client
    return _I32.pack(len(payload)) + payload


@dataclass
class FuzzTarget:
    """One broker to fuzz: its address, and the node behind it when it runs here."""

    name: str
    host: str
    port: int
    target: Target | None = None
    node: Node | None = None
    restarts: int = 0
    trackers: list[PeakTracker] = field(default_factory=list)
    cpu_s: dict[int, float] = field(default_factory=dict)
    security: ClientSecurity | None = None
    """TLS and SASL for every connection (the probe's, the workers', the canary's); None: PLAINTEXT."""

    @property
    def local(self) -> bool:
        return self.node is not None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def process_alive(self) -> bool | None:
        """None when the process is not ours to see."""
        return None if self.node is None else self.node.is_running

    def restart(self) -> None:
        """Start the local node again on the same port and data (after a crash)."""
        if self.node is None:
            raise TargetUnavailableError(f"{self.name} is not launched here: it cannot be restarted")
        self.node.stop(timeout_s=5)
        self.node.start()
        self.restarts += 1
        self.track()

    def track(self) -> None:
        if self.node is not None and self.node.pid is not None:
            self.trackers.append(PeakTracker(self.node.pid))

    def sample(self) -> None:
        if self.trackers:
            self.trackers[-1].observe()
            self.cpu_s[self.trackers[-1].pid] = cpu_seconds(self.trackers[-1].pid) or self.cpu_s.get(
                self.trackers[-1].pid, 0.0)

    @property
    def cpu_total_s(self) -> float:
        """CPU seconds the target's processes used while sampled (all incarnations)."""
        return sum(self.cpu_s.values())

    @property
    def rss_peak_mb(self) -> float:
        return max((t.rss_peak_mib for t in self.trackers), default=0.0)

    @property
    def fds_peak(self) -> int:
        return max((t.fds_peak for t in self.trackers), default=0)

    def log_text(self, limit: int = 64 << 20) -> str:
        """The local node's log (bounded), to count handler tracebacks."""
        if self.node is None or not self.node.log_path.exists():
            return ""
        with self.node.log_path.open("rb") as f:
            return f.read(limit).decode(errors="replace")

    def close(self) -> None:
        if self.target is not None:
            self.target.close()


def open_target(
    spec: str, broker_configs: list[str], security: str | None = None, client: ClientSecurity | None = None
) -> FuzzTarget:
    """Launch or attach to ``spec`` (one broker). ``security`` launches a reference secured (its own
    client settings then); ``client`` are the settings for an attached or other target
    (``--command-config``)."""
    spec = normalise(spec)
    if broker_configs and not spec.startswith("reference"):
        raise TargetUnavailableError("--broker-config is for reference brokers (launched here)")
    if security is not None and spec != "reference":
        raise TargetUnavailableError(f"--security launches a reference; give {spec} --command-config")
    target = launch(spec, broker_configs=broker_configs, security=security)
    if target.secured is not None:
        client = target.secured.client
    if target.nodes:
        node = target.nodes[0]
        ft = FuzzTarget(target.name, node.host, node.port, target, node, security=client)
        ft.track()
        return ft
    host, _, port = target.bootstrap_servers.split(",")[0].rpartition(":")
    return FuzzTarget(target.name, host, int(port), target, security=client)


Pair = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def probe(
    host: str, port: int, timeout_s: float, security: ClientSecurity | None = None
) -> Pair | None:
    """A fresh connection that answered ApiVersions v0 within ``timeout_s`` (and, on a SASL target,
    then authenticated); None if none did."""
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await open_stream(host, port, security)
    except (TimeoutError, OSError):
        return None
    try:
        async with asyncio.timeout(timeout_s):
            writer.write(probe_frame())
            size = _I32.unpack(await reader.readexactly(4))[0]
            if not 0 < size <= 1 << 20:
                raise ConnectionError(f"probe answer of {size} bytes")
            answer = await reader.readexactly(size)
            if security is not None and security.sasl:
                await authenticate_stream(reader, writer, security, f"{host}:{port}", _advertised(answer))
        return reader, writer
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ConnectionError, WireError):
        writer.close()
        return None


def _advertised(answer: bytes) -> dict[int, tuple[int, int]] | None:
    """api key → (min, max) from the probe's ApiVersions v0 answer; None when it does not parse."""
    try:
        _, body = decode_response(18, PROBE_VERSION, answer)
    except MalformedResponseError:
        return None
    keys: Any = getattr(body, "api_keys", ())
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in keys}
