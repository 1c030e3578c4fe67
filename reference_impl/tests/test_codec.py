"""Request/response codec: headers by hand, bodies by kio, both directions agree."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.static.primitive import i16

from reference_impl.protocol import codec
from reference_impl.protocol.apis import (
    request_header_version,
    response_header_version,
    schema_versions,
)
from reference_impl.protocol.frames import FrameDecoder


def _one_frame(data: bytes) -> bytes:
    (f,) = FrameDecoder().feed(data)
    return f


def test_flexible_request_round_trip() -> None:
    body = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="t"),),  # type: ignore[arg-type]
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    f = _one_frame(codec.encode_request(body, correlation_id=7, client_id="me"))
    header, decoded = codec.decode_request(f)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 12, 7)
    assert header.client_id == "me"
    assert decoded == body


def test_legacy_request_with_null_client_id() -> None:
    body = MetadataRequestV1(topics=None)
    header, decoded = codec.decode_request(_one_frame(codec.encode_request(body, 1, None)))
    assert header.client_id is None and header.api_version == 1
    assert decoded == body


def test_header_versions_follow_flexibility() -> None:
    assert request_header_version(3, 12) == 2 and response_header_version(3, 12) == 1
    assert request_header_version(3, 1) == 1 and response_header_version(3, 1) == 0
    # ApiVersions responses always use header v0, even for flexible v3 (KIP-511).
    assert request_header_version(18, 3) == 2 and response_header_version(18, 3) == 0


def test_trailing_bytes_are_ignored_but_a_truncated_body_is_malformed() -> None:
    """Kafka's generated readers stop after the last field (librdkafka 2.16 relies on it)."""
    body = ApiVersionsRequest(client_software_name="a", client_software_version="1")
    f = _one_frame(codec.encode_request(body, 3, "c"))
    assert codec.decode_request(f + b"\x00\x01")[1] == body
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(f[:-3])


def test_truncated_header_is_malformed() -> None:
    with pytest.raises(codec.MalformedRequestError):
        codec.decode_request(b"\x00\x03\x00")


def test_response_round_trip_v0_error_body() -> None:
    body = ApiVersionsResponseV0(error_code=ErrorCode.unsupported_version, api_keys=())
    f = _one_frame(codec.encode_response(18, 999, 42, body))
    corr, decoded = codec.decode_response(18, 0, f)
    assert corr == 42 and decoded == body


def test_schema_versions_cover_kafka_range() -> None:
    assert schema_versions(0) == range(3, 14)
    assert i16(0) == 0
