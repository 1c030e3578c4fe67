"""DescribeConfigs: v1-4. Effective configs of topics and of this broker, with their sources.

Behaviour: ``configuration_keys`` null lists every config; each entry has
its value, source, read-only flag and (``include_synonyms``) the chain of
configs its value could come from, most specific first; v3+ adds the type
and (``include_documentation``) the documentation. Errors per resource:
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST (another broker's id, an
unknown resource type). Broker loggers (type 8) answer an empty list.
Groups (type 32, any id, existing or not) answer every ``GroupConfig`` key
(configs/resolution.describe_group_configs). A broker (its id) answers every config Kafka defines
(configs/catalogue.py) and those set on it; the cluster-wide default (name "") only the dynamic
defaults set (Kafka's ConfigHelper), each with its source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..configs.model import ConfigType
from ..configs.resolution import ConfigEntry, describe_group_configs, describe_topic_configs
from ..metadata.image import CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from ..telemetry import CLIENT_METRICS_SOURCE, INSPECT_RESOURCE
from .access import Op
from .configs_common import BROKER_LOGGER_RESOURCE, check_access, check_resource
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


def _entry(e: ConfigEntry, synonyms: bool, docs: bool) -> dict[str, Any]:
    # Kafka never shows a password config's value, nor one of a config it does not define
    # (KafkaConfig.maybeSensitive: an unknown type may be a password)
    sensitive = e.type in (ConfigType.PASSWORD, ConfigType.UNKNOWN)
    return {
        "name": e.name,
        "value": None if sensitive else e.value,
        "read_only": e.read_only,
        "config_source": int(e.source),
        "is_sensitive": sensitive,
        "config_type": int(e.type),
        "documentation": (e.doc or None) if docs else None,  # none for a config Kafka does not define
        "synonyms": [
            {"name": n, "value": None if sensitive else v, "source": int(s)} for n, v, s in e.synonyms
        ]
        if synonyms
        else [],
    }


def subscription_entries(broker: HandlerHost, name: str, keys: list[str] | None) -> list[dict[str, Any]]:
    """A client-metrics subscription's configs as Kafka's ``ConfigHelper`` lists them: only those set,
    source CLIENT_METRICS_CONFIG, no synonyms. The reserved name :data:`INSPECT_RESOURCE` answers, one
    entry per client instance, what clients pushed (the harness's read path, core/telemetry.py)."""
    if name == INSPECT_RESOURCE:
        configs = broker.telemetry.inspect(broker.image)
    else:
        configs = broker.image.client_metrics.get(name, {})
    return [
        {
            "name": k,
            "value": v,
            "read_only": name == INSPECT_RESOURCE,
            "config_source": CLIENT_METRICS_SOURCE,
            "is_sensitive": False,
            "config_type": 0,
            "documentation": None,
            "synonyms": [],
        }
        for k, v in sorted(configs.items())
        if keys is None or k in keys
    ]


@handles(32, 1, 4)
def handle_describe_configs(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    synonyms = bool(request.include_synonyms)
    docs = bool(get(request, "include_documentation", False))
    results = []
    for r in request.resources:
        rtype, rname = int(r.resource_type), r.resource_name
        result: dict[str, Any] = {
            "resource_type": rtype,
            "resource_name": rname,
            "error_code": ErrorCode.none,
            "error_message": None,
            "configs": [],
        }
        try:
            check_access(broker, ctx, rtype, rname, Op.DESCRIBE_CONFIGS)
            check_resource(broker, rtype, rname)
            keys = list(r.configuration_keys) if r.configuration_keys is not None else None
            if rtype == TOPIC_RESOURCE:
                entries = describe_topic_configs(broker.image.topics[rname].configs, broker.config, keys)
            elif rtype == GROUP_RESOURCE:
                overrides = broker.image.group_configs.get(rname, {})
                entries = describe_group_configs(overrides, broker.config, keys)
            elif rtype == BROKER_LOGGER_RESOURCE:
                entries = []
            elif rtype == CLIENT_METRICS_RESOURCE:
                result["configs"] = subscription_entries(broker, rname, keys)
                results.append(result)
                continue
            else:  # this broker (its id) or the cluster-wide defaults ("")
                entries = broker.config.describe(keys, per_broker=rname != "")
            result["configs"] = [_entry(e, synonyms, docs) for e in entries]
        except KafkaError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        results.append(result)
    return Respond(build(response_class(32, ctx.api_version), {"throttle_time": 0, "results": results}))
