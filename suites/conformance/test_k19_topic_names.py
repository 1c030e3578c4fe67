"""Topic names Kafka refuses, matched whole, at every CreateTopics version (issue 17, item 6).

Kafka's rule (clients/src/main/java/org/apache/kafka/common/internals/Topic.java, ``validate`` and
``containsValidPattern``, applied by the controller's ``ReplicationControlManager.validateNewTopicNames``):
1 to 249 characters, each an ASCII alphanumeric, '.', '_' or '-', and not "." or "..". Every character
is checked, so a name with a trailing newline is refused: the reference broker once accepted ``nl\\n``
(a ``$`` anchor matches before a final newline), which broke its offset checkpoints. Metadata answers
INVALID_TOPIC_EXCEPTION for such a name too, with or without auto-creation
(core/src/main/scala/kafka/server/KafkaApis.scala ``getTopicMetadata``;
core/src/main/scala/kafka/server/AutoTopicCreationManager.scala ``filterCreatableTopics``).
"""

from __future__ import annotations

import pytest

from fixtures.wire import Capabilities, Router, ops

from .expect import expect, expect_code

FEATURE = "Topic administration"
RULE = "Topic.java validate"

ILLEGAL_NAMES = {
    "trailing-newline": "nl\n",
    "leading-newline": "\nnl",
    "carriage-return": "cr\r",
    "tab": "tab\t",
    "space": "sp ace",
    "slash": "a/b",
    "non-ascii": "caf\u00e9",
    "too-long": "x" * 250,
    "dot": ".",
    "dotdot": "..",
    "empty": "",
}


def _all_topic_names(router: Router, caps: Capabilities) -> set[str]:
    answer = ops.metadata(router, caps, None, version=caps.best("metadata", lo=1))
    return {t.name for t in answer.topics}


@pytest.mark.versions("create_topics")
@pytest.mark.parametrize("name", list(ILLEGAL_NAMES.values()), ids=list(ILLEGAL_NAMES))
def test_illegal_topic_name_is_refused(version: int, name: str, router: Router, caps: Capabilities) -> None:
    """CreateTopics with an illegal name is INVALID_TOPIC_EXCEPTION at this version, and no topic of that
    name appears in Metadata."""
    result = ops.create_topic(router, caps, name, 1, version=version)
    where = f"CreateTopics v{version} {name!r}"
    expect_code(result.error_code, "INVALID_TOPIC_EXCEPTION", rule=RULE, where=where)
    expect(name not in _all_topic_names(router, caps), RULE, f"{name!r} was created")


def test_the_longest_legal_name_is_accepted(router: Router, caps: Capabilities) -> None:
    """249 legal characters is the limit, not one below it (the refusal above is about the rule, not any
    long name)."""
    name = ("kh-" + "x" * 249)[:249]
    result = ops.create_topic(router, caps, name, 1)
    expect_code(result.error_code, "NONE", "TOPIC_ALREADY_EXISTS", rule=RULE, where="249 characters")


@pytest.mark.parametrize("auto_create", [False, True], ids=["no-auto-create", "auto-create"])
def test_metadata_of_an_illegal_name_is_invalid_topic(
    auto_create: bool, router: Router, caps: Capabilities
) -> None:
    """Metadata naming ``nl\\n`` answers INVALID_TOPIC_EXCEPTION for it, and auto-creation creates nothing."""
    version = caps.best("metadata", lo=4)  # v4+: allow_auto_topic_creation
    answer = ops.metadata(router, caps, ["nl\n"], version=version, auto_create=auto_create)
    expect_code(answer.topics[0].error_code, "INVALID_TOPIC_EXCEPTION", rule=RULE, where="Metadata 'nl\\n'")
    expect("nl\n" not in _all_topic_names(router, caps), RULE, "Metadata auto-created 'nl\\n'")
