"""Group config resources (resource type 32, KIP-848/KIP-932): Kafka's GroupConfig keys, each overriding
a broker ``group.*`` config for one group, and the ``by_duration:`` form of ``share.auto.offset.reset``.
A table of Kafka's definitions beside :mod:`.tables` (which holds the topic and broker ones)."""

from __future__ import annotations

import re

from .model import ConfigDef, ConfigType
from .tables import BROKER_CONFIGS
from .validators import at_least as _at_least
from .validators import same as _same

_T = ConfigType
_DURATION = re.compile(
    r"P(?:(\d{1,9})D)?(?:T(?=\d)(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,12})(?:\.(\d{1,9}))?S)?)?",
    re.IGNORECASE,
)
BY_DURATION = "by_duration:"


def reset_duration_ms(value: str) -> int | None:
    """``by_duration:<duration>`` of ``share.auto.offset.reset`` (Kafka's
    ``ShareGroupAutoOffsetResetStrategy``: a ``java.time.Duration`` in ISO-8601 form PnDTnHnMn.nS,
    not negative) in milliseconds; None when ``value`` is not one. Signs are not taken."""
    if not value.startswith(BY_DURATION):
        return None
    text = value[len(BY_DURATION) :]
    match = _DURATION.fullmatch(text)
    if match is None or text.upper() in ("P", "PT"):
        return None
    days, hours, minutes, seconds, fraction = match.groups()
    whole = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60 + int(seconds or 0)
    return whole * 1000 + int((fraction or "0").ljust(9, "0")[:3])


GROUP_CONFIGS: dict[str, ConfigDef] = {
    # KIP-848/KIP-932's group config resources (resource type 32): Kafka's GroupConfig
    # (group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupConfig.java). The
    # synonym is the broker config a group without an override runs with (its default).
    d.name: d
    for d in (
        *(
            ConfigDef(
                name,
                _T.INT,
                None,
                f"Overrides {broker} for this group.",
                synonyms=((broker, _same),),
                valid=_at_least(1000 if name == "share.record.lock.duration.ms" else 1),
            )
            for name, broker in (
                ("consumer.session.timeout.ms", "group.consumer.session.timeout.ms"),
                ("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms"),
                ("share.session.timeout.ms", "group.share.session.timeout.ms"),
                ("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms"),
                ("share.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
            )
        ),
        ConfigDef(
            "share.auto.offset.reset",
            _T.STRING,
            "latest",
            "The strategy to initialize the share-partition start offset: latest, earliest or "
            "by_duration:<ISO-8601 duration> (the first record at most that old).",
            valid=lambda v: v in ("latest", "earliest") or reset_duration_ms(v) is not None,
        ),
    )
}

# The share coordinator's topic (KIP-932; Kafka's ShareCoordinatorConfig, read at apache/kafka 4f278ec1:
# share.coordinator.state.topic.num.partitions 50, .replication.factor 3). Broker configs, kept here
# because tables.py is at the module size limit.
BROKER_CONFIGS.update(
    (d.name, d)
    for d in (
        ConfigDef(
            f"share.coordinator.state.topic.{name}",
            kind,
            default,
            f"{what} of __share_group_state.",
            valid=_at_least(1),
            read_only=True,
        )
        for name, kind, default, what in (
            ("num.partitions", _T.INT, "50", "Partitions"),
            ("replication.factor", _T.SHORT, "3", "Replication"),
        )
    )
)
