"""The admin commands against the reference broker and Tansu: tables, JSON, and errors without tracebacks."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from kafka_harness.cli import main

CREATE_PARTITIONS = 37


def advertised_apis(bootstrap: str) -> set[int]:
    """The API keys a broker advertises in ApiVersions (asked over a plain socket)."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    from reference_impl.protocol.codec import decode_response, encode_request
    from reference_impl.protocol.frames import FrameDecoder

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    request = ApiVersionsRequest(client_software_name="kh", client_software_version="1")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(request, 1, "kafka-harness-test"))
        decoder, frames = FrameDecoder(), []
        while not frames:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the connection"
            frames = decoder.feed(chunk)
    _corr, response = decode_response(18, 3, frames[0])
    return {int(k.api_key) for k in response.api_keys}  # type: ignore[attr-defined]


@pytest.fixture(scope="module", params=["reference", "tansu"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    running = launch(request.param)
    yield running
    running.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_topics_create_describe_alter_delete(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    b = target.bootstrap_servers
    name = f"adm-{uuid.uuid4().hex[:6]}"
    assert (
        run(capsys, "topics", "-b", b, "create", name, "--partitions", "2", "--replication-factor", "1")[0]
        == 0
    )
    status, _out, err = run(capsys, "topics", "-b", b, "create", name, "--partitions", "2")
    assert status == 1 and "TOPIC_ALREADY_EXISTS" in err and "Traceback" not in err
    status, out, _err = run(capsys, "topics", "-b", b, "--json", "describe", name)
    rows = json.loads(out)
    assert status == 0 and [r["partition"] for r in rows] == [0, 1] and all(r["leader"] >= 0 for r in rows)
    status, out, _err = run(capsys, "offsets", "-b", b, "--json", name, "--time", "earliest")
    assert status == 0 and [r["offset"] for r in json.loads(out)] == [0, 0]
    assert run(capsys, "topics", "-b", b, "delete", name)[0] == 0


def test_alter_partitions_works_or_names_the_missing_api(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target that advertises CreatePartitions grows the topic; one that does not gets a clean error."""
    b = target.bootstrap_servers
    name = f"adm-{uuid.uuid4().hex[:6]}"
    assert (
        run(capsys, "topics", "-b", b, "create", name, "--partitions", "1", "--replication-factor", "1")[0]
        == 0
    )
    status, _out, err = run(capsys, "topics", "-b", b, "alter", name, "--partitions", "3")
    if CREATE_PARTITIONS in advertised_apis(b):
        assert status == 0, err
        _status, out, _err = run(capsys, "topics", "-b", b, "--json", "describe", name)
        assert len(json.loads(out)) == 3
    else:
        assert status == 1 and "UNSUPPORTED_FEATURE" in err and "Traceback" not in err


def test_errors_are_messages_not_tracebacks(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = run(capsys, "topics", "-b", target.bootstrap_servers, "describe", "no-such-topic")
    assert status == 1 and "UNKNOWN_TOPIC_OR_PART" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as usage:
        main(["offsets", "no-bootstrap-given"])
    assert usage.value.code == 2
