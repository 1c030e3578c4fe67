"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: resource checks, and the
alter APIs' round over their resources."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.catalogue import BROKER_SCOPES, PER_BROKER
from ..configs.group_configs import GROUP_CONFIGS
from ..configs.kafka_broker_catalogue import CLUSTER_LEVEL_LISTENER_CONFIGS, PER_LISTENER_ONLY
from ..configs.model import ConfigError
from ..configs.resolution import validate_group_configs
from ..configs.tables import BROKER_CONFIGS, TOPIC_CONFIGS
from ..kraft.quorum import PEER_CLIENT_PREFIX
from ..metadata.image import BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from ..telemetry import check_subscription
from .access import CLUSTER, GROUP, TOPIC, Op, allowed
from .registry import Reply, Respond

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

BROKER_LOGGER_RESOURCE = 8


def check_access(
    broker: HandlerHost, ctx: RequestContext, resource_type: int, resource_name: str, op: Op
) -> None:
    """Kafka's ``ConfigHelper``/``ConfigAdminManager`` authorization (issue 18), before anything
    else: ``op`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic (TOPIC_AUTHORIZATION_FAILED) or
    on the cluster for a broker or broker-logger resource (CLUSTER_AUTHORIZATION_FAILED), on the
    group for a group resource (GROUP_AUTHORIZATION_FAILED)."""
    if resource_type == GROUP_RESOURCE:
        if not allowed(broker, ctx, op, GROUP, resource_name):
            raise KafkaError(
                ErrorCode.group_authorization_failed, f"Group {resource_name} authorization failed."
            )
    elif resource_type == TOPIC_RESOURCE:
        if not allowed(broker, ctx, op, TOPIC, resource_name):
            raise KafkaError(
                ErrorCode.topic_authorization_failed, f"Topic {resource_name} authorization failed."
            )
    elif resource_type in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE) and not allowed(
        broker, ctx, op, CLUSTER, "kafka-cluster"
    ):
        raise KafkaError(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")


def check_resource(
    broker: HandlerHost,
    resource_type: int,
    resource_name: str,
    *,
    altering: bool = False,
    received_by: int | None = None,
) -> None:
    """Kafka's checks: a known type, an existing topic, this broker's id (or "" for the default). A
    change forwarded to the controller (KIP-590) is checked against the id of the broker that
    ``received_by`` it, as that broker's ``ConfigAdminManager`` checks it before forwarding."""
    node_id = broker.node_id if received_by is None else received_by
    if resource_type == TOPIC_RESOURCE:
        if resource_name not in broker.image.topics:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist")
    elif resource_type in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE):
        if resource_name not in ("", str(node_id)):
            # ConfigHelper.resourceNameToBrokerId (describe), ConfigAdminManager.
            # validateResourceNameIsCurrentNodeId (alter)
            if not resource_name.lstrip("-").isdigit():
                subject = "Node id" if altering else "Broker id"
                message = f"{subject} must be an integer, but it is: {resource_name}"
            else:
                expected = f"{node_id}" if altering else f"{node_id} or empty string"
                message = f"Unexpected broker id, expected {expected}, but received {resource_name}"
            raise KafkaError(ErrorCode.invalid_request, message)
    elif resource_type == CLIENT_METRICS_RESOURCE:
        if not resource_name:
            raise KafkaError(ErrorCode.invalid_request, "Client metrics subscription name must not be empty")
    elif resource_type == GROUP_RESOURCE:
        if not resource_name:
            raise KafkaError(ErrorCode.invalid_request, "Group name must not be empty")
    else:  # ConfigAdminManager.preprocess (alter), ConfigHelper (describe)
        message = "Unknown resource type" if altering else "Unsupported resource type:"
        raise KafkaError(ErrorCode.invalid_request, f"{message} {resource_type}")


def current_overrides(broker: HandlerHost, resource_type: int, resource_name: str) -> dict[str, str]:
    """The configs set on a (checked) resource: a topic's, a broker's own or the cluster-wide broker
    defaults (resource name ""), a subscription's, a group's."""
    if resource_type == TOPIC_RESOURCE:
        return broker.image.topics[resource_name].configs
    if resource_type == CLIENT_METRICS_RESOURCE:
        return broker.image.client_metrics.get(resource_name, {})
    if resource_type == GROUP_RESOURCE:
        return broker.image.group_configs.get(resource_name, {})
    if resource_name:
        return broker.image.node_configs.get(resource_name, {})
    return broker.image.broker_configs


def _scala_set(names: list[str]) -> str:
    return f"Set({', '.join(names)})"


def _listener_base(name: str) -> str | None:
    """``listener.name.NAME.CONFIG`` → CONFIG (DynamicBrokerConfig's ListenerConfigRegex)."""
    if not name.startswith("listener.name."):
        return None
    _listener, dot, base = name[len("listener.name.") :].partition(".")
    return base if dot and base else None


def check_broker_changes(resource_name: str, props: dict[str, str]) -> None:
    """A broker resource's dynamic configs after the change, as Kafka's ``DynamicBrokerConfig.validate``
    checks them on the broker (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala,
    ``validateConfigs``; ``ConfigAdminManager`` makes every failure INVALID_REQUEST): read-only configs
    first, then the SSL store configs named without a listener prefix, then each value against its
    definition (a listener-prefixed one against its base config), then, at the cluster-wide default
    (resource name ""), the configs each broker must be given on its own. A name Kafka does not define
    is accepted and stored (``DynamicConfig.Broker.validate`` allows custom configs)."""

    def refuse(names: list[str], message: str) -> None:
        if names:
            raise KafkaError(ErrorCode.invalid_request, f"{message}: {_scala_set(names)}")

    refuse(
        [n for n in props if (d := BROKER_CONFIGS.get(n)) is not None and d.read_only],
        "Cannot update these configs dynamically",
    )
    refuse(
        [n for n in props if n in PER_LISTENER_ONLY],
        "These security configs can be dynamically updated only per-listener using the listener prefix",
    )
    for name, value in props.items():
        definition = BROKER_CONFIGS.get(_listener_base(name) or name)
        if definition is not None:
            try:
                definition.validate(value)
            except ConfigError as exc:
                raise KafkaError(ErrorCode.invalid_request, str(exc)) from None
    if not resource_name:
        refuse(
            [
                n
                for n in props
                if BROKER_SCOPES.get(n) == PER_BROKER
                or ((base := _listener_base(n)) is not None and base not in CLUSTER_LEVEL_LISTENER_CONFIGS)
            ],
            "Cannot update these configs at default cluster level, broker id must be specified",
        )


def preprocess(names: list[str], null_names: list[str]) -> None:
    """``ConfigAdminManager.preprocess``, on the broker, for every resource of AlterConfigs and
    IncrementalAlterConfigs before anything else: a config named twice, or set to null (not deleted),
    is INVALID_REQUEST."""
    if len(set(names)) < len(names):
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    if null_names:
        raise KafkaError(ErrorCode.invalid_request, f"Null value not supported for : {', '.join(null_names)}")


def check_changes(resource_type: int, changes: dict[str, str | None]) -> None:
    """Unknown names and bad values are INVALID_CONFIG (topics, groups); client-metrics subscriptions
    as Kafka's ClientMetricsConfigs.validate (core/telemetry.py). Broker resources are checked whole,
    by :func:`check_broker_changes`."""
    if resource_type == CLIENT_METRICS_RESOURCE:
        check_subscription(changes)
        return
    kind, definitions = {
        TOPIC_RESOURCE: ("topic", TOPIC_CONFIGS),
        GROUP_RESOURCE: ("group", GROUP_CONFIGS),
    }.get(resource_type, ("broker", BROKER_CONFIGS))
    for name, value in changes.items():
        definition = definitions.get(name)
        if definition is None:
            raise KafkaError(ErrorCode.invalid_config, f"Unknown {kind} config name: {name}")
        if definition.read_only:
            raise KafkaError(ErrorCode.invalid_request, f"Cannot update these configs dynamically: {name}")
        if value is not None:
            try:
                definition.validate(value)
            except ConfigError as exc:
                raise KafkaError(ErrorCode.invalid_config, str(exc)) from None


def check_group_changes(broker: HandlerHost, group_id: str, changes: dict[str, str | None]) -> None:
    """The group's overrides after ``changes`` as Kafka's ``GroupConfig.validate`` checks them
    (bounds from this broker's ``group.*`` configs, session timeout above heartbeat): INVALID_CONFIG."""
    try:
        validate_group_configs(current_overrides(broker, GROUP_RESOURCE, group_id) | changes, broker.config)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.invalid_config, str(exc)) from None


def _forwarded_by(ctx: RequestContext) -> int | None:
    """The broker that forwarded this request to the controller (its client id ``broker-<id>``)."""
    sender = ctx.client_id[len(PEER_CLIENT_PREFIX) :] if ctx.client_id.startswith(PEER_CLIENT_PREFIX) else ""
    return int(sender) if sender.isdigit() else None


def alter_resources(
    broker: HandlerHost,
    ctx: RequestContext,
    request: Any,
    api_key: int,
    changes_of: Callable[[int, str, Any], dict[str, str | None]],
) -> Reply:
    """AlterConfigs' and IncrementalAlterConfigs' round: each resource checked (ALTER_CONFIGS on it
    first), its changes (from ``changes_of(resource_type, resource_name, resource)``, which checks
    them) written through the controller (or only checked with ``validate_only``), an error per
    resource."""
    responses = []
    named = Counter((int(r.resource_type), r.resource_name) for r in request.resources)
    for r in request.resources:
        rtype, rname = int(r.resource_type), r.resource_name
        entry: dict[str, Any] = {
            "resource_type": rtype,
            "resource_name": rname,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        try:
            if named[(rtype, rname)] > 1:  # ConfigAdminManager.preprocess
                raise KafkaError(ErrorCode.invalid_request, "Each resource must appear at most once.")
            check_access(broker, ctx, rtype, rname, Op.ALTER_CONFIGS)
            check_resource(broker, rtype, rname, altering=True, received_by=_forwarded_by(ctx))
            changes = changes_of(rtype, rname, r)
            if rtype == GROUP_RESOURCE:
                check_group_changes(broker, rname, changes)
            broker.controller.writer().set_configs(
                rtype,
                rname,
                changes,
                validate_only=bool(request.validate_only),
                now_ms=ctx.received_ms,
            )
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        responses.append(entry)
    broker.sync_partitions(ctx.received_ms)
    return Respond(
        build(response_class(api_key, ctx.api_version), {"throttle_time": 0, "responses": responses})
    )
