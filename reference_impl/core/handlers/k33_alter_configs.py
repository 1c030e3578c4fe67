"""AlterConfigs: v0-2. Replace a resource's dynamic configs with exactly the given set.

Behaviour: the legacy, non-incremental API: configs not listed lose their
override. INVALID_CONFIG for an unknown name or a bad value,
INVALID_REQUEST for a config that cannot change at run time;
``validate_only`` checks without applying.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..metadata.image import TOPIC_RESOURCE
from .access import Op
from .configs_common import check_access, check_changes, check_resource
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(33, 0, 2)
def handle_alter_configs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    responses = []
    for r in request.resources:
        rtype, rname = int(r.resource_type), r.resource_name
        entry: dict[str, Any] = {
            "resource_type": rtype,
            "resource_name": rname,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        try:
            check_access(broker, ctx, rtype, rname, Op.ALTER_CONFIGS)
            check_resource(broker, rtype, rname)
            wanted: dict[str, str | None] = {c.name: c.value for c in r.configs}
            check_changes(rtype, wanted)
            current = (
                broker.image.topics[rname].configs if rtype == TOPIC_RESOURCE else broker.image.broker_configs
            )
            changes = dict(wanted)
            for name in current:
                if name not in wanted:
                    changes[name] = None
            broker.controller.writer().set_configs(
                rtype, rname, changes, validate_only=bool(request.validate_only), now_ms=ctx.received_ms
            )
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        responses.append(entry)
    broker.sync_partitions(ctx.received_ms)
    return Respond(build(response_class(33, ctx.api_version), {"throttle_time": 0, "responses": responses}))
