"""What a run asks the target once before fuzzing: what it advertises, and topics to name.

The generator names existing topics so that requests get past "unknown topic" into the code
that handles data; three fuzz topics of three partitions are created here (an existing one is
fine) and their ids read from Metadata v10+ (KIP-516), which Fetch v13+ and others address
topics by.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from fixtures.wire import Capabilities, WireClient, WireError, ops
from fixtures.wire.security import ClientSecurity

from .generate import Context


class SetupError(RuntimeError):
    """The target did not answer what every run needs (ApiVersions, Metadata)."""


def prepare(
    address: str, ctx: Context, *, with_ids: bool = True, security: ClientSecurity | None = None
) -> dict[int, tuple[int, int]]:
    """Create the fuzz topics, fill ``ctx.topic_ids`` and ``ctx.node_ids``; return the advertised
    versions (api key → (min, max)). ``security``: the target's TLS and SASL (None: the run's default)."""
    try:
        with WireClient(address, client_id="kh-fuzz-setup", timeout_s=15, security=security) as client:
            advertised = client.api_versions()
            caps = Capabilities(advertised)
            for topic in ctx.topics:
                if caps.supports("create_topics"):
                    result = ops.create_topic(client, caps, topic, ctx.partitions)
                    if result.error_code not in (ErrorCode.none, ErrorCode.topic_already_exists):
                        raise SetupError(f"CreateTopics {topic} answered {result.error_code.name}")
            answer = ops.metadata(client, caps, ctx.topics)
            ctx.node_ids = sorted({int(b.node_id) for b in answer.brokers}) or ctx.node_ids
            if with_ids:
                for t in answer.topics:
                    tid = getattr(t, "topic_id", None)
                    if isinstance(tid, uuid.UUID) and tid.int and t.name:
                        ctx.topic_ids[str(t.name)] = tid
    except (WireError, OSError) as exc:
        raise SetupError(f"{address}: {exc}") from exc
    return advertised
