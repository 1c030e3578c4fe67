"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: resource checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.model import ConfigError
from ..configs.tables import BROKER_CONFIGS, TOPIC_CONFIGS
from ..metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from .access import CLUSTER, TOPIC, Op, allowed

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

BROKER_LOGGER_RESOURCE = 8


def check_access(
    broker: HandlerHost, ctx: RequestContext, resource_type: int, resource_name: str, op: Op
) -> None:
    """Kafka's ``ConfigHelper``/``ConfigAdminManager`` authorization (issue 18), before anything
    else: ``op`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic (TOPIC_AUTHORIZATION_FAILED) or
    on the cluster for a broker or broker-logger resource (CLUSTER_AUTHORIZATION_FAILED)."""
    if resource_type == TOPIC_RESOURCE:
        if not allowed(broker, ctx, op, TOPIC, resource_name):
            raise KafkaError(
                ErrorCode.topic_authorization_failed, f"Topic {resource_name} authorization failed."
            )
    elif resource_type in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE) and not allowed(
        broker, ctx, op, CLUSTER, "kafka-cluster"
    ):
        raise KafkaError(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")


def check_resource(broker: HandlerHost, resource_type: int, resource_name: str) -> None:
    """Kafka's checks: a known type, an existing topic, this broker's id (or "" for the default)."""
    if resource_type == TOPIC_RESOURCE:
        if resource_name not in broker.image.topics:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {resource_name} does not exist")
    elif resource_type in (BROKER_RESOURCE, BROKER_LOGGER_RESOURCE):
        if resource_name not in ("", str(broker.node_id)):
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Unexpected broker id, expected {broker.node_id} or empty string, "
                f"but received {resource_name}",
            )
    else:
        raise KafkaError(ErrorCode.invalid_request, f"unsupported resource type {resource_type}")


def check_changes(resource_type: int, changes: dict[str, str | None]) -> None:
    """Unknown names and bad values are INVALID_CONFIG; static-only broker configs INVALID_REQUEST."""
    for name, value in changes.items():
        definitions = TOPIC_CONFIGS if resource_type == TOPIC_RESOURCE else BROKER_CONFIGS
        definition = definitions.get(name)
        if definition is None:
            kind = "topic" if resource_type == TOPIC_RESOURCE else "broker"
            raise KafkaError(ErrorCode.invalid_config, f"Unknown {kind} config name: {name}")
        if definition.read_only:
            raise KafkaError(ErrorCode.invalid_request, f"Cannot update these configs dynamically: {name}")
        if value is not None:
            try:
                definition.validate(value)
            except ConfigError as exc:
                raise KafkaError(ErrorCode.invalid_config, str(exc)) from None
