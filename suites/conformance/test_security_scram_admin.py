"""SCRAM credentials administered over the protocol (KIP-554): AlterUserScramCredentials (51) and
DescribeUserScramCredentials (50), on any listener; skipped where the target does not advertise them.

Kafka's rules: ``metadata/src/main/java/org/apache/kafka/controller/ScramControlManager.java``
(alter: DUPLICATE_RESOURCE for a user twice in one request, UNACCEPTABLE_CREDENTIAL for an empty
name and for iterations outside 4096..16384, UNSUPPORTED_SASL_MECHANISM for a mechanism type other
than 1 and 2, RESOURCE_NOT_FOUND to delete what does not exist) and
``metadata/src/main/java/org/apache/kafka/image/ScramImage.java`` (describe: every user when none is
named, RESOURCE_NOT_FOUND for an unknown one, DUPLICATE_RESOURCE for one named twice; mechanisms and
iterations only). On a SASL/SCRAM run a user added this way authenticates at once, and one deleted
no longer does. Users are named per test (``kh-...``) and deleted after it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.wire import Capabilities, WireClient, WireError
from fixtures.wire import scram_admin as scram
from fixtures.wire.security import ClientSecurity, default_security
from fixtures.wire.settle import eventually

from .expect import expect, expect_code, expect_equal

FEATURE = "Security: SCRAM credentials"
CONTROL = "ScramControlManager.java"
IMAGE = "ScramImage.java"


@pytest.fixture
def admin(wire: WireClient, caps: Capabilities) -> WireClient:
    for api in (50, 51):
        if not caps.supports(api):
            pytest.skip(f"the target does not advertise API {api} (KIP-554 SCRAM credential administration)")
    return wire


@pytest.fixture
def user(admin: WireClient) -> Iterator[str]:
    name = f"kh-{uuid.uuid4().hex[:8]}"
    yield name
    for mechanism in scram.MECHANISM_TYPES:  # best effort: what the test left
        try:
            scram.alter(admin, deletions=[scram.deletion(name, mechanism)])
        except WireError:
            break


APPLY_BOUND_S = 15.0
"""How long a broker may take to apply the controller's committed credential records: an alter is
answered once the controller committed them, a describe from the broker's own image (Kafka's
brokers apply metadata records on their own time, so a cluster's other brokers lag a little)."""


def _describe_once_applied(
    admin: WireClient, user: str, applied: Callable[[scram.UserResult], bool]
) -> tuple[Any, scram.UserResult]:
    """DescribeUserScramCredentials for ``user`` until ``applied(its entry)`` holds or the bound is over."""
    last: list[tuple[Any, scram.UserResult]] = []

    def described_applied() -> bool:
        top, described = scram.describe(admin, [user])
        last[:] = [(top, described[user])]
        return applied(described[user])

    eventually(described_applied, APPLY_BOUND_S, interval_s=0.1)
    return last[0]


def test_upsert_describe_delete(admin: WireClient, user: str) -> None:
    done = scram.alter(
        admin,
        upsertions=[scram.upsertion(user, "SCRAM-SHA-512", "pw-512", iterations=8192)],
    )
    expect_code(done[user].error, "NONE", rule=CONTROL)
    top, entry = _describe_once_applied(admin, user, lambda e: bool(e.credentials))
    expect_code(top, "NONE", rule=IMAGE)
    expect_equal(entry.credentials, (("SCRAM-SHA-512", 8192),), IMAGE, "mechanisms and iterations")
    _top, everyone = scram.describe(admin, None)
    expect(user in everyone, IMAGE, "describing every user left out the one just added")
    gone = scram.alter(admin, deletions=[scram.deletion(user, "SCRAM-SHA-512")])
    expect_code(gone[user].error, "NONE", rule=CONTROL)
    _top, after = _describe_once_applied(admin, user, lambda e: e.error != "NONE")
    expect_code(after.error, "RESOURCE_NOT_FOUND", rule=IMAGE)


def test_describe_refusals(admin: WireClient, user: str) -> None:
    _top, described = scram.describe(admin, [user, "kh-other-" + user, "kh-other-" + user])
    expect_code(described[user].error, "RESOURCE_NOT_FOUND", rule=IMAGE)
    expect_code(described["kh-other-" + user].error, "DUPLICATE_RESOURCE", rule=IMAGE)


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("iterations-4095", "UNACCEPTABLE_CREDENTIAL"),
        ("iterations-16385", "UNACCEPTABLE_CREDENTIAL"),
        ("mechanism-3", "UNSUPPORTED_SASL_MECHANISM"),
        ("empty-name", "UNACCEPTABLE_CREDENTIAL"),
        ("delete-absent", "RESOURCE_NOT_FOUND"),
        ("twice", "DUPLICATE_RESOURCE"),
    ],
)
def test_alter_refusals(admin: WireClient, user: str, case: str, error: str) -> None:
    name = "" if case == "empty-name" else user
    ups, dels = [], []
    if case.startswith("iterations-"):
        ups = [scram.upsertion(name, "SCRAM-SHA-256", "pw", iterations=int(case.split("-")[1]))]
    elif case == "mechanism-3":
        ups = [dict(scram.upsertion(name, "SCRAM-SHA-256", "pw"), mechanism=3)]
    elif case == "empty-name":
        ups = [scram.upsertion(name, "SCRAM-SHA-256", "pw")]
    elif case == "delete-absent":
        dels = [scram.deletion(name, "SCRAM-SHA-256")]
    else:
        ups = [scram.upsertion(name, "SCRAM-SHA-256", "pw"), scram.upsertion(name, "SCRAM-SHA-512", "pw")]
    results = scram.alter(admin, upsertions=ups, deletions=dels)
    expect(name in results, CONTROL, f"no result for {name!r}: {sorted(results)}")
    expect_code(results[name].error, error, rule=CONTROL)
    if name:
        _top, described = scram.describe(admin, [name])
        expect_code(described[name].error, "RESOURCE_NOT_FOUND", rule=CONTROL, where="nothing was written")


def test_a_new_user_authenticates_and_a_deleted_one_does_not(
    admin: WireClient, user: str, wire_factory: Callable[..., WireClient]
) -> None:
    run = default_security() or ClientSecurity()
    mechanism = run.mechanism or ""
    if not run.sasl or not mechanism.startswith("SCRAM-"):
        pytest.skip(f"the run does not authenticate with SCRAM ({run.protocol} {run.mechanism or ''})")
    done = scram.alter(admin, upsertions=[scram.upsertion(user, mechanism, "pw-new")])
    expect_code(done[user].error, "NONE", rule=CONTROL)
    as_user = run.with_credentials(user, "pw-new")

    def logs_in() -> bool:
        """Whether ``user`` authenticates now. The change is answered once the controller commits it;
        a broker applies the metadata log on its own time (Kafka's ScramPublisher too), so on a
        cluster the answer is awaited, bounded."""
        try:
            wire_factory(security=as_user).request("metadata", 1, topics=[])
        except WireError as exc:
            if "sasl_authentication_failed" not in str(exc).lower():
                raise
            return False
        return True

    def becomes(wanted: bool, timeout_s: float = 15.0) -> bool:
        return eventually(lambda: logs_in() == wanted, timeout_s, interval_s=0.1)

    expect(becomes(True), CONTROL, "a new user could not authenticate")
    scram.alter(admin, deletions=[scram.deletion(user, mechanism)])
    expect(becomes(False), CONTROL, "a deleted user still authenticated")
