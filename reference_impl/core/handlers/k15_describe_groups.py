"""DescribeGroups: v0-6. State, protocol and members of groups this broker coordinates.

Behaviour: a Stable group shows its protocol and each member's metadata and
assignment; in other states members are listed without them, as Kafka does.
A group that does not exist is reported Dead with no error, and from v6 as
GROUP_ID_NOT_FOUND (KIP-1043). A consumer-protocol group (KIP-848) is not
a classic group: Dead, and from v6 GROUP_ID_NOT_FOUND "Group X is not a
classic group." (Kafka's ``GroupMetadataManager.describeGroups``). A group coordinated elsewhere:
NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) for that group.
With an authorizer (issue 18) a group the principal may not DESCRIBE is
GROUP_AUTHORIZATION_FAILED. Version notes: v3+ authorized operations when asked
(the allowed bits of READ, DELETE and DESCRIBE; without an authorizer all
three); v4+ group instance ids; v6 an error message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..group.state import GroupState
from .access import GROUP, Op, allowed, bitfield
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

NOT_REQUESTED = -(2**31)


def describe_group(
    broker: HandlerHost, ctx: RequestContext, group_id: str, version: int, with_operations: bool
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": bitfield(broker, ctx, with_operations, GROUP, group_id),
    }
    if not allowed(broker, ctx, Op.DESCRIBE, GROUP, group_id):  # Kafka: DESCRIBE on the group
        entry.update(error_code=ErrorCode.group_authorization_failed, authorized_operations=NOT_REQUESTED)
        return entry
    coordinator = broker.group_coordinator
    try:
        coordinator.check_coordinator(group_id)
    except KafkaError as exc:
        entry.update(error_code=exc.code, error_message=exc.message if version >= 6 else None)
        return entry
    group = coordinator.groups.get(group_id)
    if group is None:
        entry["group_state"] = GroupState.DEAD.value
        if version >= 6:
            message = (
                f"Group {group_id} is not a classic group."
                if group_id in coordinator.consumer.groups
                else f"Group {group_id} not found."
            )
            entry.update(error_code=ErrorCode.group_id_not_found, error_message=message)
        return entry
    stable = group.is_in(GroupState.STABLE)
    entry.update(
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata_for(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ],
    )
    return entry


@handles(15, 0, 6)
def handle_describe_groups(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    asked = bool(get(request, "include_authorized_operations", False))
    groups = [describe_group(broker, ctx, g, ctx.api_version, asked) for g in request.groups]
    return Respond(build(response_class(15, ctx.api_version), {"throttle_time": 0, "groups": groups}))
