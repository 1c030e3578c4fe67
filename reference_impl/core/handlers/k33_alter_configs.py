"""AlterConfigs: v0-2. Replace a resource's dynamic configs with exactly the given set.

Behaviour: the legacy, non-incremental API: configs not listed lose their
override. First, for every resource, Kafka's ``ConfigAdminManager.preprocess``: a resource named
twice, a config named twice or set to null are INVALID_REQUEST. INVALID_CONFIG for an unknown name
or a bad value of a topic or group;
a broker resource (its id, or "" for the cluster-wide defaults) as Kafka's
``ConfigAdminManager`` checks it (configs_common.check_broker_changes: INVALID_REQUEST for a
read-only config, a bad value, a per-broker config at the default; custom names stored);
``validate_only`` checks without applying. Group resources (32) as Kafka's
``ControllerApis.handleLegacyAlterConfigs`` takes them: ALTER_CONFIGS on the group, then
``ControllerConfigurationValidator``'s group checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..metadata.image import BROKER_RESOURCE
from .configs_common import (
    BROKER_LOGGER_RESOURCE,
    alter_resources,
    check_broker_changes,
    check_changes,
    current_overrides,
    preprocess,
)
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(33, 0, 2)
def handle_alter_configs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def changes_of(rtype: int, rname: str, resource: Any) -> dict[str, str | None]:
        preprocess([c.name for c in resource.configs], [c.name for c in resource.configs if c.value is None])
        if rtype == BROKER_LOGGER_RESOURCE:  # log levels are IncrementalAlterConfigs' only (KIP-412)
            raise KafkaError(ErrorCode.invalid_request, f"Unknown resource type {rtype}")
        wanted: dict[str, str | None] = {c.name: c.value for c in resource.configs}
        if rtype == BROKER_RESOURCE:
            check_broker_changes(rname, {k: v for k, v in wanted.items() if v is not None})
        else:
            check_changes(rtype, wanted)
        current = current_overrides(broker, rtype, rname)
        return wanted | {name: None for name in current if name not in wanted}

    return alter_resources(broker, ctx, request, 33, changes_of)
