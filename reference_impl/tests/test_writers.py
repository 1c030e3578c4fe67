"""The generated entity writers write exactly kio's bytes, for every request and response class.

kio's ``entity_writer`` is the reference (:mod:`reference_impl.protocol.writers` says why the broker
does not use it on its hot path); hypothesis draws entities of every class of every API and
version kio carries, nested structs, nullable fields, arrays and tagged fields included, and both
writers must agree byte for byte, or both refuse the entity.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from reference_impl.protocol import codec, writers
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build
from reference_impl.tests.kio_classes import EVERY_CLASS, entity_class


def _kio(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_entity_of_every_api_and_version_is_written_as_kio_writes_it(data: st.DataObject) -> None:
    key, version, direction = data.draw(st.sampled_from(EVERY_CLASS), label="api")
    entity = data.draw(st.from_type(entity_class(key, version, direction)), label="entity")
    try:
        expected = _kio(entity)
    except Exception:  # a value kio cannot write (out of its field's range): neither can this
        try:
            writers.encode(entity)
        except Exception:
            return
        raise AssertionError("kio refuses this entity, the generated writer wrote it") from None
    assert writers.encode(entity) == expected


def test_every_entity_class_gets_a_writer() -> None:
    """One mechanism for all: a writer is generated for every request and response class kio has."""
    for key, version, direction in EVERY_CLASS:
        assert callable(writers.writer(entity_class(key, version, direction)))


def test_the_codec_encodes_with_the_generated_writers() -> None:
    """What the broker sends: a produce answer with a tagged field set (``current_leader``, v10+)
    and a non-default one left out, a fetch request with a tagged struct (``replica_state``)."""
    answer = build(
        response_class(0, 10),
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [
                        {
                            "index": 3,
                            "error_code": ErrorCode.not_leader_or_follower,
                            "base_offset": -1,
                            "log_append_time": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
                            "log_start_offset": 7,
                            "record_errors": [{"batch_index": 1, "batch_index_error_message": None}],
                            "error_message": "moved",
                            "current_leader": {"leader_id": 2, "leader_epoch": 9},
                        }
                    ],
                }
            ],
            "throttle_time": 5,
        },
    )
    assert codec.encode_body(answer) == _kio(answer)
    fetch = build(
        request_class(1, 17),
        {
            "replica_state": {"replica_id": 2, "replica_epoch": -1},
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 5,
            "session_epoch": 7,
            "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [
                {
                    "topic_id": uuid.UUID(int=1),
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": 1,
                            "fetch_offset": 100,
                            "last_fetched_epoch": 1,
                            "log_start_offset": 0,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
        },
    )
    assert codec.encode_body(fetch) == _kio(fetch)


def test_a_none_in_a_non_nullable_field_is_refused_as_kio_refuses_it() -> None:
    """A topic answer without its name is a bug in the answer, never a null on the wire."""
    entity: Any = build(
        response_class(0, 9),
        {"responses": [{"name": "t", "partition_responses": []}], "throttle_time": 0},
    )
    broken = dataclasses.replace(entity, responses=(dataclasses.replace(entity.responses[0], name=None),))
    with pytest.raises(TypeError):
        _kio(broken)
    with pytest.raises(TypeError):
        writers.encode(broken)
