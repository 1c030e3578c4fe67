"""The names Kafka restricts, checked by full match: topic names.

Kafka's ``Topic.validate`` (clients/src/main/java/org/apache/kafka/common/internals/Topic.java)
walks every character: a topic name is 1 to 249 of ``[a-zA-Z0-9._-]`` and is
not ``.`` or ``..``. It becomes a directory name and a field of the
space-and-newline separated checkpoint files, so one character too many is
not cosmetic: the topic ``nl\\n`` passed a ``^...$`` check (``$`` also matches
before a final newline), broke all three offset checkpoints and, after a clean
restart, brought back records DeleteRecords had removed.

The other names on the wire carry no character rule in Kafka: group ids,
transactional ids, client ids and config names are any string (an empty
group or transactional id is refused by the API that needs one; a config name
must be a known config). ApiVersions v3's client software name and version
have a pattern, matched whole in that handler.
"""

from __future__ import annotations

import re

from reference_impl import defects

MAX_TOPIC_NAME = 249
"""Kafka's ``Topic.MAX_NAME_LENGTH``."""
_LEGAL_TOPIC_CHARACTERS = re.compile(r"[a-zA-Z0-9._-]+")
_ANCHORED_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
"""The old check: ``match`` with ``$`` lets ``"name\\n"`` through (the seeded defect ``name-anchor``)."""


def has_legal_topic_characters(name: str) -> bool:
    """Whether every character of ``name`` is an ASCII alphanumeric, '.', '_' or '-' (the whole name)."""
    if defects.enabled(defects.NAME_ANCHOR):
        return _ANCHORED_LEGAL_TOPIC.match(name) is not None
    return _LEGAL_TOPIC_CHARACTERS.fullmatch(name) is not None


def topic_name_problem(name: str) -> str | None:
    """Why Kafka refuses ``name`` as a topic name (its ``Topic.validate`` message), or None if it is legal."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return (f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
                f"{MAX_TOPIC_NAME}")
    if not has_legal_topic_characters(name):
        return (f"Topic name is invalid: {name!r} contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


def is_legal_topic_name(name: str) -> bool:
    return topic_name_problem(name) is None
