"""AlterConfigs: v0-2. Replace a resource's dynamic configs with exactly the given set.

Behaviour: the legacy, non-incremental API: configs not listed lose their
override. INVALID_CONFIG for an unknown name or a bad value,
INVALID_REQUEST for a config that cannot change at run time;
``validate_only`` checks without applying. Group resources (32) as Kafka's
``ControllerApis.handleLegacyAlterConfigs`` takes them: ALTER_CONFIGS on the group, then
``ControllerConfigurationValidator``'s group checks (a null value is INVALID_CONFIG).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .configs_common import alter_resources, check_changes, current_overrides, refuse_null_group_values
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(33, 0, 2)
def handle_alter_configs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    def changes_of(rtype: int, rname: str, resource: Any) -> dict[str, str | None]:
        wanted: dict[str, str | None] = {c.name: c.value for c in resource.configs}
        refuse_null_group_values(rtype, [name for name, value in wanted.items() if value is None])
        check_changes(rtype, wanted)
        current = current_overrides(broker, rtype, rname)
        return wanted | {name: None for name in current if name not in wanted}

    return alter_resources(broker, ctx, request, 33, changes_of)
