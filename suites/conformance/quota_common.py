"""What the client quota conformance cases share (test_k49_*): a connection of its own as a fresh
client id that holds a quota, set with AlterClientQuotas over the raw wire and removed afterwards.

A broker enforces a quota once its metadata image holds it, a moment after the controller commits
it: the connection opens once the broker it goes to describes the quota (DescribeClientQuotas,
bounded by :data:`SETTLE_S`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from fixtures.wire import WireClient
from fixtures.wire import client_quotas as cq

from .expect import expect, expect_code

CONTROL = "ClientQuotaControlManager.java"
IMAGE = "ClientQuotasImage.java"
SETTLE_S = 15.0
"""How long a read back waits for the broker's image to show a committed change."""

OpenAs = Callable[[str, str], WireClient]
"""``open_as(address, client_id)``: a new raw connection to ``address`` as ``client_id``."""


@contextmanager
def quota_limited(
    admin: WireClient,
    at: WireClient,
    open_as: OpenAs,
    quotas: Mapping[str, float],
    *,
    versions: tuple[int, int],
) -> Iterator[WireClient]:
    """A connection to ``at``'s broker as a fresh client id (``kh-quota-...``) whose client-id
    entity holds ``quotas``; ``versions`` are (AlterClientQuotas, DescribeClientQuotas)."""
    client_id = f"kh-quota-{uuid.uuid4().hex[:8]}"
    quota_entity = cq.entity(client_id=client_id)
    alter_v, describe_v = versions
    try:
        done = cq.alter(admin, [(quota_entity, dict(quotas))], version=alter_v)
        expect_code(done[0].error, "NONE", rule=CONTROL)
        deadline = time.monotonic() + SETTLE_S
        while True:
            _top, found = cq.describe(at, [("client-id", cq.EXACT, client_id)], version=describe_v)
            if set(found.get(quota_entity, {})) >= set(quotas) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        expect(
            set(found.get(quota_entity, {})) >= set(quotas),
            IMAGE,
            f"the broker never showed {quotas}: {found}",
        )
        yield open_as(at.address, client_id)
    finally:
        cq.alter(admin, [(quota_entity, dict.fromkeys(quotas))], version=alter_v)
