"""``kafka-harness acls`` on a secured reference (SASL_PLAINTEXT, ACLs on, admin the super user):
add, list and remove as admin; the restricted user is refused with the Kafka error; a usage error
is exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.targets import Target

from .secured_target import secured_reference

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def secured() -> Iterator[Target]:
    yield from secured_reference("sasl_plaintext")


def acls(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_harness", "acls", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_add_list_remove(secured: Target) -> None:
    assert secured.secured is not None and secured.secured.restricted is not None
    admin = ["-b", secured.bootstrap_servers, "--command-config", str(secured.secured.properties)]
    prefix = f"cli-{uuid.uuid4().hex[:6]}-"
    added = acls(*admin, "add", "--allow-principal", "User:alice", "--operation", "read", "--operation",
                 "describe", "--topic", prefix, "--resource-pattern-type", "prefixed")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout.count("added TOPIC") == 2
    listed = acls(*admin, "--json", "list", "--topic", prefix + "x", "--resource-pattern-type", "match")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert sorted(r["operation"] for r in rows) == ["DESCRIBE", "READ"]
    assert {(r["name"], r["pattern"], r["principal"], r["permission"]) for r in rows} == {
        (prefix, "PREFIXED", "User:alice", "ALLOW")
    }
    alice = ["-b", secured.bootstrap_servers, "--command-config", str(secured.secured.restricted)]
    refused = acls(*alice, "list")
    assert refused.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr
    removed = acls(*admin, "remove", "--topic", prefix, "--resource-pattern-type", "prefixed")
    assert removed.returncode == 0, removed.stderr
    assert "2 ACL(s) removed" in removed.stdout
    after = acls(*admin, "--json", "list", "--topic", prefix + "x", "--resource-pattern-type", "match")
    assert json.loads(after.stdout) == []


def test_usage_errors_exit_2(secured: Target) -> None:
    where = ["-b", secured.bootstrap_servers]
    assert acls(*where, "add", "--allow-principal", "User:a", "--operation", "read").returncode == 2
    bad = acls(*where, "add", "--allow-principal", "User:a", "--operation", "fly", "--topic", "t")
    assert bad.returncode == 2 and "not a Operation" in bad.stderr
