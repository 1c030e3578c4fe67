"""What a config is: its Kafka type, where a value comes from, its definition and checks.

The definitions themselves (Kafka's names and defaults) are the data table in :mod:`.tables`;
how a broker or topic value is resolved and described is :mod:`.resolution`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigs v3+ ``config_type``."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs ``config_source`` (v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config name or value Kafka would reject (INVALID_CONFIG)."""


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    synonyms: tuple[tuple[str, Callable[[str], str]], ...] = ()
    """Broker configs that set this topic config, most specific first, with a converter."""
    valid: Callable[[str], bool] | None = None
    choices: tuple[str, ...] = ()
    read_only: bool = False
    hidden: bool = False
    """Not listed by DescribeConfigs unless set (the seeded bug modes' switch)."""
    rule: str | Callable[[str], str] = ""
    """Why a value ``valid`` refuses is refused, in Kafka's words (``Range``: "Value must be at least 1"),
    or the function of the value that says it."""

    def validate(self, value: str | None) -> str | None:
        """The value normalised, or :class:`ConfigError` naming the key."""
        if value is None:
            if self.type in (ConfigType.STRING, ConfigType.LIST, ConfigType.PASSWORD):
                return None
            raise ConfigError(f"Invalid value null for configuration {self.name}")
        try:
            if self.type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
                number = int(value.strip())
                bound = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 2**15 - 1}.get(self.type, LONG_MAX)
                if not -bound - 1 <= number <= bound:
                    raise ValueError("out of range")
                value = str(number)
            elif self.type is ConfigType.DOUBLE:
                value = repr(float(value))
            elif self.type is ConfigType.BOOLEAN:
                lowered = value.strip().lower()
                if lowered not in ("true", "false"):
                    raise ValueError("not a boolean")
                value = lowered
        except ValueError:  # ConfigDef.parseType's messages
            why = (
                "Expected value to be either true or false"
                if self.type is ConfigType.BOOLEAN
                else f"Not a number of type {self.type.name}"
            )
            raise ConfigError(f"Invalid value {value} for configuration {self.name}: {why}") from None
        if self.choices:
            items = [v.strip() for v in value.split(",")] if self.type is ConfigType.LIST else [value]
            for item in items:
                if item not in self.choices:
                    raise ConfigError(
                        f"Invalid value {value} for configuration {self.name}: "
                        f"String must be one of: {', '.join(self.choices)}"
                    )
        if self.valid is not None and not self.valid(value):
            why = self.rule(value) if callable(self.rule) else self.rule
            raise ConfigError(f"Invalid value {value} for configuration {self.name}" + (why and f": {why}"))
        return value


def _node_addresses(
    value: str, key: str, separator: str, form: str, host_required: bool
) -> dict[int, tuple[str, int]]:
    """``value``'s comma-separated ``NODE<separator>HOST:PORT`` entries → {node: (host, port)}."""
    out: dict[int, tuple[str, int]] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        node, sep, address = item.partition(separator)
        host, colon, port = address.rpartition(":")
        if (
            not sep
            or not colon
            or (host_required and not host)
            or not node.strip().isdigit()
            or not port.isdigit()
        ):
            raise ConfigError(f"{key} entry {item!r} is not {form}")
        out[int(node)] = (host, int(port))
    return out


def parse_peer_addresses(value: str) -> dict[int, tuple[str, int]]:
    """``inter.broker.addresses``: ``2=host:port,3=host:port`` → {2: (host, port), 3: ...}."""
    return _node_addresses(value, "inter.broker.addresses", "=", "NODE=HOST:PORT", host_required=False)


def parse_quorum_voters(value: str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters``: ``1@host:port,2@host:port`` → {1: (host, port), 2: ...}."""
    return _node_addresses(value, "controller.quorum.voters", "@", "ID@HOST:PORT", host_required=True)


BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"
MAX_BOOTSTRAP_SERVERS = 64


def parse_bootstrap_servers(value: str) -> list[tuple[str, int]]:
    """``controller.quorum.bootstrap.servers``: ``host:port,host:port`` as Kafka's
    ``raft/src/main/java/org/apache/kafka/raft/QuorumConfig.java`` ``parseBootstrapServers`` reads it
    (IPv6 hosts in brackets); ConfigError naming the entry otherwise."""
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if len(entries) > MAX_BOOTSTRAP_SERVERS:
        raise ConfigError(f"{BOOTSTRAP_SERVERS}: at most {MAX_BOOTSTRAP_SERVERS} entries, got {len(entries)}")
    out: list[tuple[str, int]] = []
    for entry in entries:
        host, colon, port = entry.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not colon or not host or any(c.isspace() for c in host):
            raise ConfigError(
                f"Failed to parse host name from {entry} for the configuration {BOOTSTRAP_SERVERS}. "
                'Each entry should be in the form "{host}:{port}"'
            )
        if not port.isdigit() or not 0 < int(port) <= 65_535:
            raise ConfigError(
                f"Failed to parse host port from {entry} for the configuration {BOOTSTRAP_SERVERS}. "
                'Each entry should be in the form "{host}:{port}"'
            )
        out.append((host, int(port)))
    return out
