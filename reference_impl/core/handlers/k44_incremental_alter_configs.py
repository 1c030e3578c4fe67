"""IncrementalAlterConfigs: v0-1. SET, DELETE, APPEND or SUBTRACT single configs (KIP-339).

Behaviour: APPEND and SUBTRACT apply to list configs only (INVALID_CONFIG
otherwise) and work on the current effective value; a resource named twice, a config named twice
in one resource or set to null (Kafka's ``ConfigAdminManager.preprocess``) are INVALID_REQUEST;
unknown names and bad values of topics and groups are INVALID_CONFIG; a broker resource is checked
whole after the change as Kafka's broker checks it (configs_common.check_broker_changes,
INVALID_REQUEST); ``validate_only`` checks without applying. Group resources (32, Kafka's
``GroupConfig``) are checked whole after the change (configs_common.check_group_changes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.client_metrics import CLIENT_METRICS_CONFIGS
from ..configs.group_configs import GROUP_CONFIGS
from ..configs.model import ConfigType
from ..configs.resolution import effective_group_configs, effective_topic_configs
from ..configs.tables import BROKER_CONFIGS, TOPIC_CONFIGS
from ..metadata.image import BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from .configs_common import (
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

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@handles(44, 0, 1)
def handle_incremental_alter_configs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def changes_of(rtype: int, rname: str, resource: Any) -> dict[str, str | None]:
        preprocess(
            [c.name for c in resource.configs],
            [c.name for c in resource.configs if int(c.config_operation) != DELETE and c.value is None],
        )
        if rtype == TOPIC_RESOURCE:
            effective = effective_topic_configs(broker.image.topics[rname].configs, broker.config)
        elif rtype == CLIENT_METRICS_RESOURCE:
            effective = dict(broker.image.client_metrics.get(rname, {}))
        elif rtype == GROUP_RESOURCE:
            effective = effective_group_configs(broker.image.group_configs.get(rname, {}), broker.config)
        else:  # a broker resource: its stored values, else the defaults
            stored = current_overrides(broker, rtype, rname)
            defaults = {k: d.default for k, d in BROKER_CONFIGS.items() if d.default is not None}
            effective = defaults | stored
        changes = {
            c.name: _apply(rtype, c.name, int(c.config_operation), c.value, effective)
            for c in resource.configs
        }
        if rtype == BROKER_RESOURCE:
            after = current_overrides(broker, rtype, rname) | changes
            check_broker_changes(rname, {k: v for k, v in after.items() if v is not None})
        else:
            check_changes(rtype, changes)
        return changes

    return alter_resources(broker, ctx, request, 44, changes_of)


def _apply(rtype: int, name: str, op: int, value: str | None, effective: dict[str, str]) -> str | None:
    if op == SET:
        return value
    if op == DELETE:
        return None
    tables = {
        TOPIC_RESOURCE: TOPIC_CONFIGS,
        CLIENT_METRICS_RESOURCE: CLIENT_METRICS_CONFIGS,
        GROUP_RESOURCE: GROUP_CONFIGS,
    }
    definition = tables.get(rtype, BROKER_CONFIGS).get(name)
    if definition is None and rtype == BROKER_RESOURCE:
        raise KafkaError(ErrorCode.invalid_config, f"Unknown config name: {name}")
    if op not in (APPEND, SUBTRACT):
        raise KafkaError(ErrorCode.invalid_request, f"Unknown config operation {op}")
    if definition is None or definition.type is not ConfigType.LIST:
        if rtype == BROKER_RESOURCE:  # ConfigAdminManager.prepareIncrementalConfigs, on the broker
            verb = "append" if op == APPEND else "subtract"
            message = f"Config value {verb} is not allowed for config key: {name}"
        else:  # the controller's ConfigurationControlManager.incrementalAlterConfigResource
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            message = f"Can't {verb} to key {name} because its type is not LIST."
        raise KafkaError(ErrorCode.invalid_config, message)
    current = [v for v in (effective.get(name) or "").split(",") if v]
    items = [v.strip() for v in (value or "").split(",") if v.strip()]
    if op == APPEND:
        result = current + [v for v in items if v not in current]
    else:
        result = [v for v in current if v not in items]
    return ",".join(result)
