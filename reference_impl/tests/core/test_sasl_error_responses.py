"""A request out of turn during a SASL exchange is answered ILLEGAL_SASL_STATE in its own response
type for every API, as Kafka's ``SaslServerAuthenticator.handleSaslToken`` does with
``AbstractRequest.getErrorResponse``: at the top when the version has a top-level error code, and
on every resource the request names (Produce's partitions, Metadata's topics, FindCoordinator's
keys, ...) when it has none. Before, an API whose response has no top-level error code (or needs
more than one) got no answer at all."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from reference_impl.core.handlers.registry import HANDLERS
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_response
from reference_impl.protocol.error_response import with_defaults
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_security import SASL_CONFIGS

ILLEGAL = ErrorCode.illegal_sasl_state


def _out_of_turn(harness: BrokerHarness, body: Any) -> tuple[Any, str]:
    """``body`` sent after SaslHandshake, before SaslAuthenticate: (its answer, the close reason)."""
    cid = harness.connect("SASL_PLAINTEXT")
    assert harness.call(request(17, 1, mechanism="PLAIN"), cid).error_code == ErrorCode.none
    harness.send(cid, body)
    frames = harness.responses.get(cid) or []
    assert len(frames) == 1, f"{type(body).__name__}: no answer (closed: {harness.closed.get(cid)})"
    _corr, answer = decode_response(int(body.__api_key__), int(body.__version__), frames.pop())
    return answer, harness.closed[cid]


def test_every_api_and_version_is_answered_in_its_own_response_type() -> None:
    """A minimal request of each version of each API the broker serves: a decodable answer of that
    API and version (with ILLEGAL_SASL_STATE at the top where the version has a top-level error
    code), then the connection closes, naming the API as Kafka does."""
    harness = BrokerHarness(*SASL_CONFIGS)
    answered = 0
    for api_key, handler in sorted(HANDLERS.items()):
        if api_key in (17, 36):  # SaslHandshake, SaslAuthenticate: the exchange itself
            continue
        for version in range(handler.min_version, handler.max_version + 1):
            cls = request_class(api_key, version)
            answered_acks = {"acks": 1} if api_key == 0 else {}  # acks=0: no answer, checked below
            answer, reason = _out_of_turn(harness, build(cls, with_defaults(cls, answered_acks)))
            assert type(answer) is response_class(api_key, version)
            top = {f.name: getattr(answer, f.name) for f in dataclasses.fields(answer)}
            assert top.get("error_code", ILLEGAL) == ILLEGAL, (api_key, version)
            assert reason.startswith("Unexpected Kafka request of type ") and "SASL authentication" in reason
            answered += 1
    assert answered > 200  # every version of every API, not a handful


def test_resources_named_in_the_request_carry_the_error() -> None:
    harness = BrokerHarness(*SASL_CONFIGS)
    partitions = [{"index": 0, "records": None}, {"index": 3, "records": None}]
    produce = request(0, 9, transactional_id=None, acks=1, timeout=1000,
                      topic_data=[{"name": "t", "partition_data": partitions}])  # fmt: skip
    answer, reason = _out_of_turn(harness, produce)
    assert "PRODUCE" in reason
    (topic,) = answer.responses
    assert topic.name == "t"
    assert [(p.index, p.error_code, p.base_offset) for p in topic.partition_responses] == [
        (0, ILLEGAL, -1),
        (3, ILLEGAL, -1),
    ]
    metadata = request(3, 12, topics=[{"name": "a", "topic_id": uuid.UUID(int=0)}, {"name": "b",
                       "topic_id": uuid.UUID(int=0)}], include_topic_authorized_operations=False)  # fmt: skip
    answer, _ = _out_of_turn(harness, metadata)
    assert [(t.name, t.error_code) for t in answer.topics] == [("a", ILLEGAL), ("b", ILLEGAL)]
    answer, _ = _out_of_turn(harness, request(10, 4, key_type=0, coordinator_keys=["g1", "g2"]))
    assert [(c.key, c.error_code, c.node_id) for c in answer.coordinators] == [
        ("g1", ILLEGAL, -1),
        ("g2", ILLEGAL, -1),
    ]
    fetch = request(1, 6, max_wait=0, min_bytes=1, topics=[{"topic": "t", "partitions": [
        {"partition": 2, "fetch_offset": 0, "partition_max_bytes": 1}]}])  # fmt: skip
    answer, _ = _out_of_turn(harness, fetch)  # v4-6 have no top-level error: every partition has it
    codes = [(p.partition_index, p.error_code) for t in answer.responses for p in t.partitions]
    assert codes == [(2, ILLEGAL)]
    create = request(19, 7, timeout=1000, validate_only=False, topics=[{"name": "n", "num_partitions": 1,
                     "replication_factor": 1, "assignments": [], "configs": []}])  # fmt: skip
    answer, _ = _out_of_turn(harness, create)
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        ("n", ILLEGAL, "Unexpected Kafka request of type CREATE_TOPICS during SASL authentication.")
    ]
    offsets = request(9, 8, groups=[{"group_id": "g", "topics": None}], require_stable=False)
    answer, _ = _out_of_turn(harness, offsets)
    assert [(g.group_id, g.error_code, list(g.topics)) for g in answer.groups] == [("g", ILLEGAL, [])]
    join = request(11, 9, group_id="g", session_timeout=1000, member_id="", protocol_type="consumer",
                   protocols=[])  # fmt: skip
    answer, _ = _out_of_turn(harness, join)
    assert (answer.error_code, answer.generation_id, answer.member_id) == (ILLEGAL, -1, "")


def test_kafka_answers_only_what_names_the_resource() -> None:
    """Entries copy what names the resource and nothing else of the request (CreateTopics does not
    echo the asked partition count: -1, as CreatableTopicResult's default); a null Metadata topic
    name becomes "" (MetadataRequest.getErrorResponse); AlterUserScramCredentials answers each user
    once, sorted; a Produce with acks=0 gets no answer (ProduceRequest.getErrorResponse: null)."""
    harness = BrokerHarness(*SASL_CONFIGS)
    create = request(19, 7, timeout=1000, validate_only=False, topics=[{"name": "n", "num_partitions": 3,
                     "replication_factor": 2, "assignments": [], "configs": []}])  # fmt: skip
    answer, _ = _out_of_turn(harness, create)
    assert [(t.num_partitions, t.replication_factor) for t in answer.topics] == [(-1, -1)]
    by_id = request(3, 12, topics=[{"name": None, "topic_id": uuid.UUID(int=9)}],
                    include_topic_authorized_operations=False)  # fmt: skip
    answer, _ = _out_of_turn(harness, by_id)
    assert [(t.name, t.topic_id) for t in answer.topics] == [("", uuid.UUID(int=9))]
    scram = request(51, 0, deletions=[{"name": "u", "mechanism": 1}], upsertions=[
        {"name": name, "mechanism": 1, "iterations": 4096, "salt": b"s", "salted_password": b"p"}
        for name in ("v", "u")])  # fmt: skip
    answer, _ = _out_of_turn(harness, scram)
    assert [(r.user, r.error_code) for r in answer.results] == [("u", ILLEGAL), ("v", ILLEGAL)]
    cid = harness.connect("SASL_PLAINTEXT")
    harness.call(request(17, 1, mechanism="PLAIN"), cid)
    harness.send(cid, request(0, 9, transactional_id=None, acks=0, timeout=1000, topic_data=[]))
    assert not harness.responses.get(cid) and "PRODUCE" in harness.closed[cid]


def test_many_topics_are_answered_one_entry_each() -> None:
    """Hostile input: a Metadata naming 5,000 topics during the exchange (a frame under
    ``sasl.server.max.receive.size`` holds at most ~20,000) is answered, one entry per topic, each
    built once (no per-entry search of those before it); the elapsed time is printed, not asserted."""
    import time

    harness = BrokerHarness(*SASL_CONFIGS)
    names = [f"t{i:05d}" for i in range(5_000)]
    body = request(3, 12, topics=[{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
                   include_topic_authorized_operations=False)  # fmt: skip
    started = time.perf_counter()
    answer, _ = _out_of_turn(harness, body)
    print(f"5,000-topic Metadata during SASL answered in {time.perf_counter() - started:.2f} s")
    assert [t.name for t in answer.topics] == names
    assert {t.error_code for t in answer.topics} == {ILLEGAL}
