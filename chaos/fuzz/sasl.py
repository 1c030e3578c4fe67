"""The SASL exchange fuzzed: hostile handshakes and tokens on fresh, unauthenticated connections.

The main run's connections authenticate first (the SASL APIs then only meet ILLEGAL_SASL_STATE);
this phase attacks the exchange itself on a SASL listener, as Kafka's ``SaslServerAuthenticator``
sees it before anything else. Case ``i`` of seed ``s`` comes from ``Random("kh-fuzz-sasl:s:i")``:

* ``handshake``: SaslHandshake with a hostile mechanism name (empty, long, binary, another case) or
  version, or SaslAuthenticate with no handshake first;
* ``garbage`` / ``mutated``: a handshake (the run's mechanism, or another the listener may enable),
  then SaslAuthenticate with random bytes, or the mechanism's real first message (PLAIN, SCRAM
  client-first, OAUTHBEARER ``n,,\\x01auth=Bearer``) with bytes flipped, inserted, deleted or cut;
* ``oversized``: a SaslAuthenticate frame past ``sasl.server.max.receive.size`` (600,000 bytes);
* ``lying-size``: a frame whose size announces more than is sent (the broker waits: silence is
  allowed, a dead broker is not);
* ``wrong-nonce``: a real SCRAM exchange whose client-final carries another nonce (RFC 5802 §5.1);
* ``raw-v0``: SaslHandshake v0, then bare garbage tokens (KIP-43 framing);
* ``reauth``: an authenticated connection sends SaslHandshake and hostile tokens again (KIP-368).

Each case runs on its own connection; each answer is read within ``hang_s``. Outcomes: ``answered``,
``closed`` (what Kafka does to most of these), ``silent`` (no answer, allowed only for a lying size),
``hang`` (no answer and no close when one was due) and ``died`` (a liveness probe then fails). The
frames a case sent are its reproducer: ``--replay`` sends them again, in order, on an
unauthenticated connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from fixtures.wire import WireError
from fixtures.wire.client import build_request
from fixtures.wire.security import ClientSecurity
from fixtures.wire.streams import authenticate_stream, open_stream
from reference_impl.protocol.codec import MalformedResponseError, decode_response, encode_request
from reference_impl.protocol.sasl_client import (
    SaslClientError,
    ScramClient,
    oauthbearer_first,
    plain_token,
    unsecured_jws,
)

from .classify import CLOSED, DIED, HANG, SILENT
from .target import FuzzTarget, probe

KINDS = ("handshake", "garbage", "mutated", "oversized", "lying-size", "wrong-nonce", "raw-v0", "reauth")
WEIGHTS = (14, 18, 26, 3, 5, 10, 8, 16)
OVERSIZED = 600_000
OTHER_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
MAX_ANSWER = 1 << 20
ANSWERED = "answered"
Step = bytes | Callable[[bytes | None], bytes | None]
"""A frame to send, or one made from the previous answer (None: stop)."""


@dataclass
class SaslCase:
    index: int
    kind: str
    steps: list[Step]
    authenticated_first: bool = False
    may_be_silent: bool = False
    sent: list[bytes] = field(default_factory=list)


@dataclass
class SaslStats:
    cases: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)
    crashes: list[SaslCase] = field(default_factory=list)
    hangs: list[SaslCase] = field(default_factory=list)
    probes: int = 0


def _frame(api: str, version: int, correlation_id: int, **fields: object) -> bytes:
    return encode_request(build_request(api, version, fields), correlation_id, "kh-fuzz-sasl")


def _mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif op == 1:
            pos = rng.randint(0, len(out))
            out[pos:pos] = bytes(rng.choice((0, 1, 0x2C, 0x3D, 0xFF, 0x7F)) for _ in range(rng.randint(1, 8)))
        elif op == 2 and out:
            start = rng.randrange(len(out))
            del out[start : start + rng.randint(1, 16)]
        else:
            out = out[: rng.randint(0, len(out))]
    return bytes(out)


TOKEN_ISSUED_AT_S = 1_700_000_000
TOKEN_LIFETIME_S = 20 * 365 * 86400
"""The fuzz tokens' iat and lifetime: fixed, so a case is the same bytes every time (and valid until 2043)."""


def _first_message(security: ClientSecurity, mechanism: str, rng: random.Random) -> bytes:
    user, password = security.username or "kh", security.password or "kh"
    if mechanism == "PLAIN":
        return plain_token(user, password)
    if mechanism == "OAUTHBEARER":
        scope = security.oauth_scope or ("kafka-harness",)
        token = unsecured_jws(user, scope=scope, issued_at_s=TOKEN_ISSUED_AT_S, lifetime_s=TOKEN_LIFETIME_S)
        return oauthbearer_first(token)
    return ScramClient(mechanism, user, password, nonce=f"kh{rng.getrandbits(64):016x}").first()


def make_case(seed: int, index: int, security: ClientSecurity, authenticate_version: int) -> SaslCase:
    """Case ``index`` of ``seed``: the same frames every time (but a SCRAM client nonce)."""
    rng = random.Random(f"kh-fuzz-sasl:{seed}:{index}")
    kind = rng.choices(KINDS, WEIGHTS)[0]
    mechanism = security.mechanism or "PLAIN"
    v = authenticate_version

    def shake(cid: int = 1, version: int = 1, name: str = mechanism) -> bytes:
        frame = _frame("sasl_handshake", min(version, 1), cid, mechanism=name)
        return frame[:6] + struct.pack(">h", version) + frame[8:]  # a version past v1: the header lies

    def auth(token: bytes, cid: int = 2) -> bytes:
        return _frame("sasl_authenticate", v, cid, auth_bytes=token)

    if kind == "handshake":
        choice = rng.randrange(5)
        if choice == 0:
            names = ["", "X" * rng.choice((1, 255, 4000)), mechanism.lower(), "\x00\xff" * 8, "GSSAPI"]
            return SaslCase(index, kind, [shake(name=rng.choice(names))])
        if choice == 1:
            return SaslCase(index, kind, [shake(version=rng.choice((2, 7, 0x7FFF)))])
        if choice == 2:  # SaslAuthenticate before any handshake
            return SaslCase(index, kind, [auth(_first_message(security, mechanism, rng), cid=1)])
        if choice == 3:  # ApiVersions twice before the handshake
            versions = _frame("api_versions", 0, 1)
            return SaslCase(index, kind, [versions, versions, shake(cid=3)])
        return SaslCase(index, kind, [shake(), shake(cid=2)])  # a handshake during the exchange
    other = rng.choice((mechanism, mechanism, *OTHER_MECHANISMS))  # the listener may enable more
    if kind == "garbage":
        token = rng.randbytes(rng.choice((0, 1, 7, 64, 1000, 4097, 20_000)))
        return SaslCase(index, kind, [shake(name=other), auth(token)])
    if kind == "mutated":
        first = _first_message(security, other, rng)
        return SaslCase(index, kind, [shake(name=other), auth(_mutate(rng, first))])
    if kind == "oversized":
        return SaslCase(index, kind, [shake(), auth(b"x" * OVERSIZED)])
    if kind == "lying-size":
        real = auth(_first_message(security, mechanism, rng))
        lie = struct.pack(">i", len(real) - 4 + rng.randint(1, 1000)) + real[4:]
        return SaslCase(index, kind, [shake(), lie], may_be_silent=True)
    if kind == "wrong-nonce" and mechanism.startswith("SCRAM-"):
        nonce = f"kh{rng.getrandbits(64):016x}"
        client = ScramClient(mechanism, security.username or "", security.password or "", nonce=nonce)

        def final(answer: bytes | None) -> bytes | None:
            server_first = _auth_bytes(answer, v)
            if server_first is None:
                return None
            try:
                message = client.final(server_first).decode()
            except SaslClientError:
                return None
            return auth(message.replace(",r=", ",r=" + rng.choice(("kh", "x", "=")), 1).encode(), cid=3)

        return SaslCase(index, kind, [shake(), auth(client.first()), final])
    if kind == "raw-v0":
        tokens = [rng.randbytes(rng.randint(0, 200)) for _ in range(rng.randint(1, 3))]
        return SaslCase(index, kind, [shake(version=0), *(struct.pack(">i", len(t)) + t for t in tokens)])
    # reauth (and wrong-nonce on a listener the run does not reach with SCRAM)
    mutated = _mutate(rng, _first_message(security, mechanism, rng))
    token = rng.choice((mutated, rng.randbytes(rng.randint(0, 300))))
    return SaslCase(index, "reauth", [shake(cid=101), auth(token, cid=102)], authenticated_first=True)


def _auth_bytes(answer: bytes | None, version: int) -> bytes | None:
    if answer is None:
        return None
    try:
        _cid, body = decode_response(36, version, answer)
    except MalformedResponseError:
        return None
    return bytes(getattr(body, "auth_bytes", b"") or b"")


async def _read(reader: asyncio.StreamReader, timeout_s: float) -> bytes | None:
    """The next answer frame; None when the connection closed; TimeoutError when nothing came."""
    async with asyncio.timeout(timeout_s):
        try:
            head = await reader.readexactly(4)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return None
        size = struct.unpack(">i", head)[0]
        if not 0 <= size <= MAX_ANSWER:
            return None
        try:
            return await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return None


async def run_case(target: FuzzTarget, case: SaslCase, hang_s: float) -> str:
    """Send the case's frames on a fresh connection; its outcome (``died`` only after a failed probe)."""
    security = target.security or ClientSecurity()
    try:
        async with asyncio.timeout(hang_s):
            reader, writer = await open_stream(target.host, target.port, security)
            if case.authenticated_first:
                await authenticate_stream(reader, writer, security, target.address)
    except (TimeoutError, OSError, WireError):
        return DIED if await probe(target.host, target.port, hang_s, target.security) is None else CLOSED
    outcome = ANSWERED
    answer: bytes | None = None
    try:
        for step in case.steps:
            frame = step(answer) if callable(step) else step
            if frame is None:
                break
            case.sent.append(frame)
            try:
                writer.write(frame)
                await writer.drain()
            except (ConnectionError, OSError):
                outcome = CLOSED
                break
            try:  # a lying size may be waited on forever: a second of silence is enough, then a probe
                answer = await _read(reader, min(hang_s, 1.0) if case.may_be_silent else hang_s)
            except TimeoutError:
                outcome = SILENT if case.may_be_silent else HANG
                break
            if answer is None:
                outcome = CLOSED
                break
    finally:
        with contextlib.suppress(Exception):
            writer.close()
    if outcome != ANSWERED and await probe(target.host, target.port, hang_s, target.security) is None:
        return DIED
    return outcome


async def run_sasl_phase(
    target: FuzzTarget,
    seed: int,
    count: int,
    hang_s: float,
    authenticate_version: int,
    concurrency: int = 4,
    progress: Callable[[str], None] | None = None,
) -> SaslStats:
    """``count`` cases, ``concurrency`` at once; a dead local target is restarted and the phase goes on."""
    stats = SaslStats()
    started = time.monotonic()
    security = target.security or ClientSecurity()
    queue = iter(range(count))
    lock = asyncio.Lock()

    async def worker() -> None:
        for index in queue:
            case = make_case(seed, index, security, authenticate_version)
            outcome = await run_case(target, case, hang_s)
            async with lock:
                stats.cases += 1
                stats.counts[outcome] += 1
                stats.by_kind.setdefault(case.kind, Counter())[outcome] += 1
                if outcome == DIED:
                    stats.crashes.append(case)
                    if target.local:
                        target.restart()
                elif outcome == HANG:
                    stats.hangs.append(case)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, 16)))))
    if progress is not None:
        took = time.monotonic() - started
        counts = dict(stats.counts)
        progress(f"sasl: {stats.cases} cases on unauthenticated connections in {took:.1f} s: {counts}")
    return stats


async def replay_frames(target: FuzzTarget, frames: list[bytes], hang_s: float) -> str:
    """A SASL reproducer's frames again, on an unauthenticated connection."""
    case = SaslCase(-1, "replay", list(frames))
    return await run_case(target, case, hang_s)


MAX_REPLAY_FRAMES = 16
SASL_PREFIX = "sasl-"


def split_frames(data: bytes) -> list[bytes]:
    """A SASL reproducer's frames (each with its size prefix); a last frame whose size lies is kept
    whole, as it was sent."""
    frames: list[bytes] = []
    pos = 0
    while pos < len(data) and len(frames) < MAX_REPLAY_FRAMES:
        size = struct.unpack(">i", data[pos : pos + 4].ljust(4, b"\0"))[0]
        end = pos + 4 + size if size >= 0 else len(data)
        if end > len(data):
            end = len(data)
        frames.append(data[pos:end])
        pos = end
    return frames


def reproducer_name(outcome: str, case: SaslCase) -> str:
    digest = hashlib.sha256(b"".join(case.sent)).hexdigest()[:12]
    return f"{SASL_PREFIX}{'crash' if outcome == DIED else outcome}-{case.kind}-{digest}.bin"
