"""Generate the reference's catalogue of Kafka's broker and topic configs from an Apache Kafka checkout.

Not needed at run time: it reads the Java (and a little Scala) of a Kafka git mirror and writes the
data modules ``reference_impl/core/configs/kafka_broker_catalogue.py`` and ``kafka_topic_catalogue.py``,
which are checked in. It takes from Kafka only facts: each config's name, type, default (as Kafka's
``ConfigDef.convertToString`` would print it), validator (as data) and dynamic scope; never its
documentation.

Where the facts come from (paths in the apache/kafka repository):

* broker configs: the ``ConfigDef``s that ``AbstractKafkaConfig.CONFIG_DEF`` merges
  (server/src/main/java/org/apache/kafka/server/config/AbstractKafkaConfig.java), each read from its
  own class (:data:`BROKER_SOURCES`); ``ZkConfigs`` is left out (ZooKeeper mode: Kafka 4 removed it,
  the reference is KRaft only);
* topic configs: ``LogConfig.CONFIG`` (storage/src/main/java/org/apache/kafka/storage/internals/log/
  LogConfig.java, its static block), names from ``TopicConfig``;
* dynamic scope: ``DynamicBrokerConfig.AllDynamicConfigs`` and ``PerBrokerConfigs``
  (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala) over ``SslConfigs.RECONFIGURABLE_CONFIGS``,
  ``LogCleaner``/``DynamicLogConfig``/``DynamicThreadPool``/``DynamicListenerConfig``/``SocketServer``/
  ``DynamicRemoteLogConfig``'s reconfigurable sets and ``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``.

Usage: ``python -m reference_impl.tools.kafka_configs_gen [--mirror DIR] [--check]`` (``--check``
compares with the checked-in modules instead of writing them; exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .java_source import (
    ClassRef,
    Evaluator,
    JavaClass,
    Mirror,
    Unresolved,
    closing,
    flatten,
    java_double,
    java_str,
    split_args,
    statement,
    tokens,
)

MIRROR = Path("/work/.mirror/apache+kafka/repo")
OUT_DIR = Path(__file__).resolve().parents[1] / "core" / "configs"

BROKER_SOURCES: tuple[tuple[str, str], ...] = (
    # (class, the ConfigDef statement(s) merged into AbstractKafkaConfig.CONFIG_DEF)
    ("RemoteLogManagerConfig", "configDef()"),
    ("ServerConfigs", "CONFIG_DEF"),
    ("KRaftConfigs", "CONFIG_DEF"),
    ("SocketServerConfigs", "CONFIG_DEF"),
    ("ReplicationConfigs", "CONFIG_DEF"),
    ("GroupCoordinatorConfig", "GROUP_COORDINATOR_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "NEW_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "OFFSET_MANAGEMENT_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "CONSUMER_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "SHARE_GROUP_CONFIG_DEF"),
    ("CleanerConfig", "CONFIG_DEF"),
    ("LogConfig", "SERVER_CONFIG_DEF"),
    ("ShareGroupConfig", "CONFIG_DEF"),
    ("ShareCoordinatorConfig", "CONFIG_DEF"),
    ("TransactionLogConfig", "CONFIG_DEF"),
    ("TransactionStateManagerConfig", "CONFIG_DEF"),
    ("QuorumConfig", "CONFIG_DEF"),
    ("MetricConfigs", "CONFIG_DEF"),
    ("QuotaConfig", "CONFIG_DEF"),
    ("BrokerSecurityConfigs", "CONFIG_DEF"),
    ("DelegationTokenManagerConfigs", "CONFIG_DEF"),
    ("PasswordEncoderConfigs", "CONFIG_DEF"),
)
DYNAMIC_ONLY_SOURCES: tuple[tuple[str, str], ...] = (
    # broker configs that exist only as dynamic ones: DynamicConfig.Broker adds them to KafkaConfig's
    # dynamic configs (core/src/main/scala/kafka/server/DynamicConfig.scala); settable per broker and at
    # the cluster default, described only when set
    ("QuotaConfig", "brokerQuotaConfigs()"),
)
EXCLUDED_SOURCES = ("ZkConfigs",)
TOPIC_SOURCE = ("LogConfig", "CONFIG")

# Values the expression reader cannot work out from constants (enum fields and methods): Kafka's value
# at the mirror's commit, each looked up by hand in the file named.
KNOWN_VALUES: dict[str, Any] = {
    # clients/.../common/record/TimestampType.java: CREATE_TIME(0, "CreateTime")
    "TimestampType.CREATE_TIME.name": "CreateTime",
    # server-common/.../record/BrokerCompressionType.java: PRODUCER("producer")
    "BrokerCompressionType.PRODUCER.name": "producer",
    "BrokerCompressionType.names().toArray(newString[0])": [
        "uncompressed",
        "zstd",
        "lz4",
        "snappy",
        "gzip",
        "producer",
    ],
    # clients/.../common/compress/{Gzip,Lz4,Zstd}Compression.java: default levels and their ranges
    "CompressionType.GZIP.defaultLevel()": -1,
    "CompressionType.LZ4.defaultLevel()": 9,
    "CompressionType.ZSTD.defaultLevel()": 3,
    "CompressionType.NONE.name": "none",
    "CompressionType.NONE.id": 0,
    "SecurityProtocol.PLAINTEXT.name": "PLAINTEXT",
    # clients/.../common/config/SslClientAuth.java: REQUIRED, REQUESTED, NONE (Utils.enumOptions lower-cases)
    "Utils.enumOptions(SslClientAuth.class)": ["required", "requested", "none"],
    # Utils.enumOptions: each constant's toString, in declaration order
    "Utils.enumOptions(SecurityProtocol.class)": ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
    "Utils.enumOptions(Group.GroupType.class)": ["consumer", "classic", "share", "unknown"],
    "Utils.enumOptions(ConsumerGroupMigrationPolicy.class)": [
        "bidirectional",
        "upgrade",
        "downgrade",
        "disabled",
    ],
    # clients/.../common/security/auth/SecurityProtocol.java
    "SecurityProtocol.values()": ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
    "MetadataVersion.latestProduction().version()": "4.0-IV0",
    "MetadataVersion.LATEST_PRODUCTION.version()": "4.0-IV0",
    # enums' toString (each file's enum: name field, or the constant's name lower-cased)
    "Group.GroupType.CLASSIC.toString()": "classic",
    "Group.GroupType.CONSUMER.toString()": "consumer",
    "ConsumerGroupMigrationPolicy.BIDIRECTIONAL.toString()": "bidirectional",
    "SslClientAuth.NONE.toString()": "none",
    "SecurityProtocol.PLAINTEXT.toString()": "PLAINTEXT",
    "IBP_3_0_IV1.version()": "3.0-IV1",
    "STATE_TOPIC_COMPRESSION_CODEC_DEFAULT.id": 0,
    "OFFSETS_TOPIC_COMPRESSION_CODEC_DEFAULT.id": 0,
    # the JDK's defaults (javax.net.ssl on OpenJDK)
    "KeyManagerFactory.getDefaultAlgorithm()": "SunX509",
    "TrustManagerFactory.getDefaultAlgorithm()": "PKIX",
    # SocketServerConfigs: every SecurityProtocol mapped to itself, in the order Kafka's HashMap gives
    "LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT": (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    ),
    "Sensor.RecordingLevel.INFO.toString()": "INFO",
    "Sensor.RecordingLevel.DEBUG.toString()": "DEBUG",
    "Sensor.RecordingLevel.TRACE.toString()": "TRACE",
}
KNOWN_VALIDATORS: dict[str, tuple[Any, ...]] = {
    "CompressionType.GZIP.levelValidator()": ("gzip_level",),  # -1 (Deflater's default) or 1..9
    "CompressionType.LZ4.levelValidator()": ("between", 1, 17),
    "CompressionType.ZSTD.levelValidator()": ("between", -131072, 22),
}


# -- the ConfigDef statements ---------------------------------------------------------------------------


@dataclass
class Definition:
    name: str
    type: str
    default: str | None
    validator: tuple[Any, ...] | None
    internal: bool
    required: bool
    origin: str


IMPORTANCE = {"HIGH", "MEDIUM", "LOW"}


def _is_importance(arg: list[str]) -> bool:
    return arg[-1] in IMPORTANCE


def config_def_statements(cls: JavaClass, def_name: str) -> Iterator[list[str]]:
    """The statements that build ``def_name`` (a field or ``configDef()``) in ``cls``: the initializer
    or method body, and ``NAME.define(...)`` statements elsewhere (static blocks)."""
    toks = cls.toks
    if def_name.endswith("()"):
        method = def_name[:-2]
        for i in range(len(toks) - 2):
            if toks[i] == method and toks[i + 1] == "(" and toks[i + 2] == ")" and toks[i + 3] == "{":
                end = closing(toks, i + 3)
                yield toks[i + 4 : end]
                return
        raise Unresolved(f"{cls.name}.{def_name}")
    if def_name in cls.fields:
        yield cls.fields[def_name]
    for i in range(len(toks) - 2):
        if toks[i] == def_name and toks[i + 1] == "." and toks[i + 2] in ("define", "defineInternal"):
            body, _ = statement(toks, i)
            yield body


def define_calls(body: list[str]) -> Iterator[tuple[bool, list[list[str]]]]:
    i = 0
    while i < len(body) - 2:
        if body[i] == "." and body[i + 1] in ("define", "defineInternal") and body[i + 2] == "(":
            close = closing(body, i + 2)
            yield body[i + 1] == "defineInternal", split_args(body[i + 3 : close])
            i = close
        i += 1


def definitions(ev: Evaluator, cls: JavaClass, def_name: str) -> list[Definition]:
    out = []
    for body in config_def_statements(cls, def_name):
        for internal, args in define_calls(body):
            try:
                out.append(definition(ev, cls, args, internal))
            except (Unresolved, ValueError, TypeError, KeyError, IndexError) as exc:
                FAILURES.append(
                    f"{cls.name}: {' '.join(args[0])} {' '.join(args[2]) if len(args) > 2 else ''}: {exc!r}"
                )
    return out


FAILURES: list[str] = []


def definition(ev: Evaluator, cls: JavaClass, args: list[list[str]], internal: bool) -> Definition:
    name = ev.eval(cls, args[0])
    kind = args[1][-1]
    rest = args[2:]
    required = _is_importance(rest[0])
    raw_default: Any = None
    validator: tuple[Any, ...] | None = None
    if not required:
        default_toks, rest = rest[0], rest[1:]
        if default_toks[-1] == "NO_DEFAULT_VALUE":
            required = True
        else:
            raw_default = ev.eval(cls, default_toks)
        if rest and not _is_importance(rest[0]):
            validator = read_validator(ev, cls, rest[0])
    return Definition(
        name,
        kind,
        None if required else kafka_string(kind, raw_default),
        validator,
        internal,
        required,
        cls.name,
    )


def kafka_string(kind: str, value: Any) -> str | None:
    """A default as Kafka's ``ConfigDef.parseType`` then ``convertToString`` prints it."""
    if value is None or kind == "PASSWORD":
        return None
    if kind == "BOOLEAN":
        return str(value).strip().lower() if isinstance(value, str) else ("true" if value else "false")
    if kind in ("INT", "SHORT", "LONG"):
        return str(int(str(value).strip()) if isinstance(value, str) else int(value))
    if kind == "DOUBLE":
        return java_double(float(value))
    if kind == "LIST":
        items = value if isinstance(value, list) else [v.strip() for v in str(value).split(",")]
        return ",".join(java_str(v) for v in items if str(v) != "")
    if kind == "CLASS":
        return value.fqn if isinstance(value, ClassRef) else str(value).strip()
    return java_str(value).strip() if kind == "STRING" else java_str(value)


def read_validator(ev: Evaluator, cls: JavaClass, toks: list[str]) -> tuple[Any, ...] | None:
    text = "".join(toks)
    if text == "null":
        return None
    for known, validator in KNOWN_VALIDATORS.items():
        if text.endswith(known):
            return validator
    head = re.match(r"^(?:new)?([\w.]+)\(", text)
    if head is None:
        return ("custom", re.sub(r"\W+", " ", text).strip().split(" ")[0])
    called = head.group(1).rpartition(".")[2]
    open_index = toks.index("(")
    close = closing(toks, open_index)
    inner = split_args(toks[open_index + 1 : close])
    if called == "atLeast":
        return ("at_least", ev.eval(cls, inner[0]))
    if called == "between":
        return ("between", ev.eval(cls, inner[0]), ev.eval(cls, inner[1]))
    if called in ("in",) and ".ValidList." not in "." + head.group(1) + ".":
        kind = "in_ci" if "CaseInsensitive" in head.group(1) else "in"
        return (kind, tuple(flatten([ev.eval(cls, a) for a in inner])))
    if called == "in":
        return ("list_in", tuple(flatten([ev.eval(cls, a) for a in inner])))
    if called == "NonEmptyString":
        return ("non_empty_string",)
    if called == "NonNullValidator":
        return ("non_null",)
    if called == "of" and "CompositeValidator" in head.group(1):
        parts = [read_validator(ev, cls, a) for a in inner]
        return ("all", *[p for p in parts if p is not None])
    return ("custom", called if called not in ("with", "of") else head.group(1))


# -- dynamic scope ----------------------------------------------------------------------------------


def scala_set(ev: Evaluator, text: str, anchor: str) -> set[str]:
    """The names of a Scala ``Set(A.B, C.D, ...)`` that follows ``anchor`` in ``text``."""
    start = text.index(anchor)
    toks = tokens(text[start:])
    open_index = next(i + 1 for i in range(len(toks) - 1) if toks[i] == "Set" and toks[i + 1] == "(")
    close = closing(toks, open_index)
    names = set()
    for arg in split_args(toks[open_index + 1 : close]):
        owner, member = arg[0], arg[-1]
        names.add(ev.constant(ev.mirror.java(owner), member))
    return names


def topic_synonyms(ev: Evaluator) -> dict[str, str]:
    """``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``: topic config → its first broker synonym."""
    if ev.synonyms is None:
        ev.synonyms = _topic_synonyms(ev)
    return ev.synonyms


def _topic_synonyms(ev: Evaluator) -> dict[str, str]:
    cls = ev.mirror.java("ServerTopicConfigSynonyms")
    body = cls.fields["ALL_TOPIC_CONFIG_SYNONYMS"]
    start = body.index("mkMap") + 1
    out = {}
    for entry in split_args(body[start + 1 : closing(body, start)]):
        helper = entry[0]
        inner = split_args(entry[2 : closing(entry, 1)])
        topic = ev.eval(cls, inner[0])
        if helper == "sameName":
            out[topic] = topic
        elif helper == "sameNameWithLogPrefix":
            out[topic] = "log." + topic
        elif helper == "sameNameWithLogCleanerPrefix":
            out[topic] = "log.cleaner." + topic
        elif helper == "singleWithLogPrefix":
            out[topic] = "log." + ev.eval(cls, inner[1])
        elif helper == "singleWithLogCleanerPrefix":
            out[topic] = "log.cleaner." + ev.eval(cls, inner[1])
        elif helper == "single":
            out[topic] = ev.eval(cls, inner[1])
        elif helper == "listWithLogPrefix":
            first = inner[1]
            out[topic] = "log." + ev.eval(cls, split_args(first[3 : closing(first, 2)])[0])
        else:
            raise Unresolved(f"synonym helper {helper}")
    return out


def dynamic_scopes(ev: Evaluator) -> tuple[set[str], set[str], set[str], set[str]]:
    """(every dynamic broker config, the per-broker ones, the SSL ones set only with a listener prefix,
    the listener configs a cluster-wide default may set) as DynamicBrokerConfig defines them."""
    dbc = ev.mirror.source("DynamicBrokerConfig")
    ssl = {
        ev.constant(ev.mirror.java("SslConfigs"), n[-1])
        for n in _java_set(ev, "SslConfigs", "RECONFIGURABLE_CONFIGS")
    }
    cleaner = scala_set(ev, ev.mirror.source("LogCleaner"), "val ReconfigurableConfigs")
    synonyms = topic_synonyms(ev)
    message_format = ev.constant(ev.mirror.java("TopicConfig"), "MESSAGE_FORMAT_VERSION_CONFIG")
    log = {b for t, b in synonyms.items() if t != message_format}
    threads = scala_set(ev, dbc, "object DynamicThreadPool")
    listener = scala_set(ev, dbc, "object DynamicListenerConfig")
    socket = scala_set(ev, ev.mirror.source("SocketServer"), "val ReconfigurableConfigs")
    producer = scala_set(ev, dbc, "val DynamicProducerStateManagerConfig")
    remote = scala_set(ev, dbc, "object DynamicRemoteLogConfig")
    metrics = {ev.constant(ev.mirror.java("MetricConfigs"), "METRIC_REPORTER_CLASSES_CONFIG")}
    every = ssl | cleaner | log | threads | metrics | listener | socket | producer | remote
    cluster_level = scala_set(ev, dbc, "val ClusterLevelListenerConfigs")
    return every, (ssl | listener) - cluster_level, ssl, cluster_level


def _java_set(ev: Evaluator, cls_name: str, field: str) -> list[list[str]]:
    body = ev.mirror.java(cls_name).fields[field]
    open_index = body.index("(")
    return split_args(body[open_index + 1 : closing(body, open_index)])


# -- output ---------------------------------------------------------------------------------------------


def scope_of(name: str, dynamic: set[str], per_broker: set[str]) -> str:
    if name not in dynamic:
        return "read-only"
    return "per-broker" if name in per_broker else "cluster-wide"


def render(
    variable: str,
    title: str,
    rows: list[Definition],
    scopes: dict[str, str],
    commit: str,
    excluded: int,
    synonyms: dict[str, str] | None = None,
    sets: dict[str, tuple[str, str, set[str]]] | None = None,
) -> str:
    if variable == "KAFKA_BROKER_CONFIGS":
        lines = [
            f'"""{title} (a data table, generated; do not edit).',
            "",
            "Generated by ``python -m reference_impl.tools.kafka_configs_gen`` from apache/kafka commit",
            f"{commit} (reference_impl/tools/kafka_configs_gen.py says where each fact comes from).",
            "A row is ``(name, type, default, validator, scope, origin, internal)``: the ConfigDef type,",
            "the default as Kafka prints it (None: none), the validator as data (None: none;",
            "``('custom', NAME)``: Kafka's own code, not checked here), the dynamic scope (read-only /",
            "per-broker / cluster-wide; topic: every topic config may be set on a topic), the class",
            "defining it, and whether DescribeConfigs leaves it out unless it is set (``defineInternal``,",
            "or a dynamic-only config).",
            '"""',
        ]
        constants = [
            f"KAFKA_COMMIT = {commit!r}",
            f"EXCLUDED = {excluded}",
            '"""Configs the mirror defines that the catalogue leaves out (ZkConfigs: ZooKeeper mode)."""',
        ]
    else:
        lines = [f'"""{title}.', "", 'Rows as in :mod:`.kafka_broker_catalogue` (generated; do not edit)."""']
        constants = []
    lines += [
        "",
        "# ruff: noqa: E501",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        *constants,
        *([""] if constants else []),
        f"{variable}: tuple[tuple[str, str, str | None, tuple[Any, ...] | None, str, str, bool], ...] = (",
    ]
    for d in sorted(rows, key=lambda r: r.name):
        lines.append(
            f"    ({d.name!r}, {d.type!r}, {d.default!r}, {d.validator!r}, {scopes[d.name]!r}, "
            f"{d.origin!r}, {d.internal!r}),"
        )
    lines.append(")")
    for variable_name, (first, second, names) in (sets or {}).items():
        lines += ["", f"{variable_name} = frozenset(", f"    # {first}", f"    # {second}", "    {"]
        lines += [f"        {n!r}," for n in sorted(names)]
        lines += ["    }", ")"]
    if synonyms is not None:
        lines += [
            "",
            "KAFKA_TOPIC_SYNONYMS: dict[str, str] = {",
            "    # ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS: a topic config -> the broker config",
            "    # that sets its default (the first of its synonyms)",
            *(f"    {t!r}: {b!r}," for t, b in sorted(synonyms.items())),
            "}",
        ]
    return "\n".join(lines) + "\n"


def generate(mirror_dir: Path) -> dict[Path, str]:
    mirror = Mirror(mirror_dir)
    ev = Evaluator(mirror, KNOWN_VALUES)
    ev.server_synonym = lambda name: topic_synonyms(ev)[name]
    broker: dict[str, Definition] = {}
    for cls_name, def_name in BROKER_SOURCES:
        for d in definitions(ev, mirror.java(cls_name), def_name):
            broker.setdefault(d.name, d)  # Utils.mergeConfigs: the first definition of a name wins
    excluded = sum(len(definitions(ev, mirror.java(c), "CONFIG_DEF")) for c in EXCLUDED_SOURCES)
    dynamic, per_broker, listener_only, cluster_level = dynamic_scopes(ev)
    for cls_name, def_name in DYNAMIC_ONLY_SOURCES:
        for d in definitions(ev, mirror.java(cls_name), def_name):
            d.internal = True  # listed by DescribeConfigs only when set
            broker.setdefault(d.name, d)
            dynamic.add(d.name)
    topic = {d.name: d for d in definitions(ev, mirror.java(TOPIC_SOURCE[0]), TOPIC_SOURCE[1])}
    broker_scopes = {n: scope_of(n, dynamic, per_broker) for n in broker}
    topic_scopes = dict.fromkeys(topic, "topic")
    return {
        OUT_DIR / "kafka_broker_catalogue.py": render(
            "KAFKA_BROKER_CONFIGS",
            "Every broker config Kafka defines: name, type, default, validator, dynamic scope",
            list(broker.values()),
            broker_scopes,
            mirror.commit,
            excluded,
            sets={
                "PER_LISTENER_ONLY": (
                    "DynamicBrokerConfig.DynamicSecurityConfigs (SslConfigs.RECONFIGURABLE_CONFIGS):",
                    "dynamic only with a listener prefix",
                    listener_only,
                ),
                "CLUSTER_LEVEL_LISTENER_CONFIGS": (
                    "DynamicBrokerConfig.ClusterLevelListenerConfigs: listener-prefixed forms a cluster-wide",
                    "default may set",
                    cluster_level,
                ),
            },
        ),
        OUT_DIR / "kafka_topic_catalogue.py": render(
            "KAFKA_TOPIC_CONFIGS",
            "Every topic config Kafka defines: name, type, default, validator",
            list(topic.values()),
            topic_scopes,
            mirror.commit,
            0,
            topic_synonyms(ev),
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--check", action="store_true", help="compare with the checked-in modules")
    args = parser.parse_args(argv)
    outputs = generate(args.mirror)
    if FAILURES:
        print("\n".join(["could not read:", *FAILURES]), file=sys.stderr)
        return 2
    differ = False
    for path, text in outputs.items():
        rows = text.count("\n    (")
        if args.check:
            same = path.exists() and path.read_text() == text
            differ |= not same
            print(f"{path.name}: {rows} configs, {'up to date' if same else 'DIFFERS'}")
        else:
            path.write_text(text)
            print(f"{path.name}: {rows} configs written")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
