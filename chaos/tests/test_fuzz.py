"""The fuzzer's parts without a broker: the encoder against kio, determinism, mutators, the shrinker,
and the classifier against a tiny local fake server that closes, answers garbage or stays silent."""

from __future__ import annotations

import asyncio
import random
import struct
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from chaos.fuzz import mutate
from chaos.fuzz.classify import (
    CLOSED,
    DECODE_OK,
    HANG,
    UNDECODABLE,
    check_answer,
    expected_silence,
)
from chaos.fuzz.encode import encode_request
from chaos.fuzz.engine import Engine
from chaos.fuzz.generate import Context, Generator
from chaos.fuzz.plan import CasePlan, Ratios
from chaos.fuzz.shrink import ddmin
from chaos.fuzz.target import FuzzTarget
from reference_impl.protocol.apis import API_NAMES, request_class, schema_versions
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_request, encode_response
from reference_impl.protocol.codec import encode_request as kio_encode_request

EVERY_VERSION = {key: (schema_versions(key).start, schema_versions(key).stop - 1) for key in API_NAMES}


def _ctx() -> Context:
    return Context(topic_ids={"kh-fuzz-0": uuid.UUID(int=7), "kh-fuzz-1": uuid.UUID(int=8)})


@pytest.mark.parametrize("seed", [1, 2])
def test_the_encoder_writes_what_kio_writes_for_every_request_class(seed: int) -> None:
    """Field-level mutation stands on the encoder's sites, so its bytes must be kio's (and so Kafka's)."""
    gen = Generator(random.Random(seed), _ctx())
    differ = []
    for key, (lo, hi) in EVERY_VERSION.items():
        for version in range(lo, hi + 1):
            cls = request_class(key, version)
            value = gen.value(cls)
            ours = encode_request(cls, key, version, value, 9).frame
            if ours != kio_encode_request(build(cls, value), 9, "kh-fuzz"):
                differ.append(f"{API_NAMES[key]} v{version}")
    assert not differ


def test_a_seed_makes_the_same_requests_and_another_seed_others() -> None:
    first = CasePlan(5, EVERY_VERSION, _ctx())
    again = CasePlan(5, EVERY_VERSION, _ctx())
    other = CasePlan(6, EVERY_VERSION, _ctx())
    cases = [first.case(i) for i in range(300)]
    assert cases == [again.case(i) for i in range(300)]
    assert [c.frame for c in cases] != [other.case(i).frame for i in range(300)]
    assert first.case(123) == cases[123]  # a case is rebuilt alone, whatever was built before
    kinds = {c.kind for c in cases}
    assert {"valid", "field", "byte"} <= kinds


def test_valid_requests_decode_and_declare_no_long_wait() -> None:
    """A valid case parses as the request it claims to be, and never asks for a silent answer."""
    plan = CasePlan(3, EVERY_VERSION, _ctx(), ratios=Ratios(valid=1.0, field=0.0, unadvertised=0.0, size=0.0))
    for i in range(400):
        case = plan.case(i)
        header, body = decode_request(case.frame[4:])
        assert (header.api_key, header.api_version) == (case.api_key, case.version)
        assert expected_silence(case.frame, 5000) is None, (case.api, case.version)
        if case.api_key == 0:
            produce: Any = body
            assert int(produce.acks) in (-1, 1)


@pytest.mark.parametrize("name", sorted(mutate.FIELD_MUTATORS))
def test_every_field_mutator_changes_the_bytes(name: str) -> None:
    rng = random.Random(11)
    gen = Generator(rng, _ctx())
    changed = 0
    for key, version in ((11, 5), (1, 12), (0, 9), (3, 12), (16, 4)):
        cls = request_class(key, version)
        enc = encode_request(cls, key, version, gen.value(cls), 1)
        for _ in range(10):
            result = mutate.FIELD_MUTATORS[name](enc, enc.frame[4:], rng)
            if result is not None:
                assert result[0] != enc.frame[4:], result[1]
                changed += 1
    assert changed > 0


def test_byte_mutations_and_size_lies_change_the_frame() -> None:
    rng = random.Random(3)
    payload = bytes(range(64))
    for _ in range(50):
        mutated, done = mutate.mutate_bytes(payload, rng, other=bytes(40))
        assert done and mutated != payload
        assert mutated[:4] == payload[:4]  # the API key and version are kept
    frame, what = mutate.size_prefix(payload, rng)
    assert struct.unpack(">i", frame[:4])[0] != len(payload), what


def test_a_length_past_the_frame_is_a_mutation_the_fuzzer_makes() -> None:
    """The shape of issue 17 item 1: a compact array length of 0xffffffff."""
    cls = request_class(16, 4)
    enc = encode_request(cls, 16, 4, {"states_filter": ["Stable"]}, 1)
    site = next(s for s in enc.sites if s.kind == "count")
    payload = enc.frame[4:]
    hit = set()
    rng = random.Random(0)
    for _ in range(200):
        result = mutate.length(enc, payload, rng)
        assert result is not None
        hit.add(result[0][site.start : site.start + 5])
    assert b"\xff\xff\xff\xff\x0f" in hit


def test_the_shrinker_finds_the_smallest_payload_that_keeps_the_property() -> None:
    payload = bytes(random.Random(1).randbytes(300)) + b"\xde\xad" + bytes(200) + b"\xbe\xef"
    frame = mutate.frame_of(payload)
    calls = []

    def reproduces(candidate: bytes) -> bool:
        calls.append(candidate)
        body = candidate[4:]
        assert struct.unpack(">i", candidate[:4])[0] == len(body)  # always a whole frame
        return b"\xde\xad" in body and b"\xbe\xef" in body

    shrunk = ddmin(frame, reproduces, max_attempts=5000, time_s=30)
    assert shrunk.frame[4:] == b"\xde\xad\xbe\xef"
    assert shrunk.complete and shrunk.attempts == len(calls)
    bounded = ddmin(frame, reproduces, max_attempts=5, time_s=30)
    assert bounded.attempts == 5 and not bounded.complete


def test_answers_are_checked_against_the_schema_and_the_correlation_id() -> None:
    frame = encode_request(request_class(18, 3), 18, 3, {"client_software_name": "a",
                                                         "client_software_version": "1"}, 42).frame
    good = _api_versions_answer(42, 3)
    assert check_answer(frame, good).cls == DECODE_OK
    assert check_answer(frame, _api_versions_answer(41, 3)).cls == UNDECODABLE
    assert check_answer(frame, good[:-3]).cls == UNDECODABLE
    assert check_answer(frame, good + b"\x00\x00").cls == UNDECODABLE


def test_produce_with_acks_zero_may_go_unanswered() -> None:
    cls = request_class(0, 9)
    value = Generator(random.Random(1), _ctx()).value(cls)
    value["acks"] = 0
    assert expected_silence(encode_request(cls, 0, 9, value, 1).frame, 5000) is not None
    value["acks"] = 1
    assert expected_silence(encode_request(cls, 0, 9, value, 1).frame, 5000) is None


# -- the classifier against a fake server -------------------------------------------------------------


def _api_versions_answer(correlation_id: int, version: int) -> bytes:
    from kio.schema.api_versions.v0.response import ApiVersionsResponse as V0
    from kio.schema.api_versions.v3.response import ApiVersionsResponse as V3

    cls = V3 if version == 3 else V0
    keys = [{"api_key": 18, "min_version": 0, "max_version": 3}]
    body: Any = build(cls, {"error_code": 0, "api_keys": keys,
                       "throttle_time": 0})
    return encode_response(18, version, correlation_id, body)[4:]


@asynccontextmanager
async def fake_server(mode: str) -> AsyncIterator[int]:
    """Answers the fuzzer's liveness probes (client id ``kh-fuzz-probe``) properly and every other
    request as ``mode`` says: ``answer``, ``garbage``, ``close`` or ``silent``."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                payload = await reader.readexactly(size)
                correlation_id = struct.unpack(">i", payload[4:8])[0]
                probe = b"kh-fuzz-probe" in payload[:30]
                if probe or mode == "answer":
                    version = 0 if probe else struct.unpack(">h", payload[2:4])[0]
                    answer = _api_versions_answer(correlation_id, version)
                elif mode == "garbage":
                    answer = struct.pack(">i", correlation_id) + b"\x00\x07\xff\xff\xff\x7f"
                elif mode == "close":
                    writer.close()
                    return
                else:
                    continue  # silent: read on, answer nothing
                writer.write(struct.pack(">i", len(answer)) + answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()


def _run_against(mode: str, requests: int) -> dict[str, int]:
    async def go() -> dict[str, int]:
        async with fake_server(mode) as port:
            plan = CasePlan(1, {18: (0, 0)}, Context(), ratios=Ratios(valid=1.0, field=0.0, unadvertised=0.0,
                                                                     size=0.0))
            engine = Engine(plan, FuzzTarget("fake", "127.0.0.1", port), requests=requests, time_s=30,
                            concurrency=4, hang_s=0.3, probe_every=5)
            stats = await engine.run()
            assert not stats.crashes
            totals: Counter[str] = Counter()
            for counts in stats.counts.values():
                totals.update(counts)
            return dict(totals)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("answer", DECODE_OK), ("garbage", UNDECODABLE), ("close", CLOSED), ("silent", HANG)],
)
def test_the_classifier_names_what_a_fake_target_did(mode: str, expected: str) -> None:
    counts = _run_against(mode, 12)
    assert counts == {expected: 12}


def test_a_target_that_stops_answering_is_counted_dead_and_ends_an_attached_run() -> None:
    async def go() -> tuple[int, str | None]:
        port_holder: list[int] = []
        async with fake_server("answer") as port:
            port_holder.append(port)
        plan = CasePlan(1, {18: (0, 0)}, Context())
        engine = Engine(plan, FuzzTarget("gone", "127.0.0.1", port_holder[0]), requests=50, time_s=30,
                        concurrency=2, hang_s=0.3)
        stats = await engine.run()
        return len(stats.crashes), stats.stopped

    crashes, stopped = asyncio.run(go())
    assert crashes >= 1 and stopped is not None



def test_a_diff_counts_differing_outcome_classes_per_api_version() -> None:
    """``--diff``: case i went to both targets; only a different class (answered vs closed, not
    decode_ok vs answered) is a difference, filed under the case's API and version, with examples."""
    from chaos.fuzz.diff import compare
    from chaos.fuzz.engine import Stats

    plan = CasePlan(2, EVERY_VERSION, _ctx())
    a, b = Stats(), Stats()
    a.outcomes = {0: DECODE_OK, 1: CLOSED, 2: DECODE_OK, 3: "answered"}
    b.outcomes = {0: DECODE_OK, 1: DECODE_OK, 2: HANG, 3: DECODE_OK}
    table, examples = compare(plan, a, b)
    first, second = plan.case(1), plan.case(2)
    assert table == Counter({(first.api, first.version, CLOSED, DECODE_OK): 1,
                             (second.api, second.version, DECODE_OK, HANG): 1})
    assert examples[(second.api, second.version, DECODE_OK, HANG)][0]["hex"] == second.frame.hex()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "nowhere"], "unknown target"),
        (["--target", "reference", "--broker-config", "reference.defects"], "KEY=VALUE"),
        (["--target", "tansu", "--broker-config", "a=b"], "for reference brokers"),
        (["--target", "reference", "--requests", "0"], "must be positive"),
        (["--target", "reference", "--apis", "no_such_api"], "unknown API"),
        (["--requests", "10"], "--target is required"),
        (["--diff", "reference"], "two targets"),
    ],
)
def test_fuzz_refuses_what_it_cannot_run(argv: list[str], message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from chaos.fuzz import cli

    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert message in err
    assert out.strip().splitlines()[-1] == "VERDICT: could not run"


def test_sasl_cases_are_reproducible_and_split_back() -> None:
    """The SASL phase's case i of seed s is the same frames each time (SCRAM nonces and token times
    aside), and a reproducer's frames split back as they were sent (a lying last size kept whole)."""
    from chaos.fuzz.sasl import KINDS, make_case, split_frames
    from fixtures.wire.security import ClientSecurity

    security = ClientSecurity("SASL_PLAINTEXT", "PLAIN", "u", "p")
    kinds = set()
    for i in range(200):
        a, b = make_case(7, i, security, 2), make_case(7, i, security, 2)
        assert a.kind == b.kind and a.steps == b.steps
        kinds.add(a.kind)
        frames = [s for s in a.steps if isinstance(s, bytes)]
        if not a.may_be_silent:
            assert split_frames(b"".join(frames)) == frames
        else:
            assert b"".join(split_frames(b"".join(frames))) == b"".join(frames)
    assert kinds >= set(KINDS) - {"wrong-nonce"}  # wrong-nonce needs SCRAM: PLAIN runs it as reauth
