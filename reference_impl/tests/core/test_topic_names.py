"""Topic names are matched whole (issue 17, item 6): ``nl\\n`` is refused everywhere a name enters.

Kafka's ``Topic.validate`` (clients/src/main/java/org/apache/kafka/common/internals/Topic.java) checks
every character; the reference's ``^[a-zA-Z0-9._-]+$`` with ``re.match`` let a trailing newline through
(``$`` matches before it), and the topic ``nl\\n`` then broke the offset checkpoints.
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from reference_impl import defects
from reference_impl.protocol.names import MAX_TOPIC_NAME, is_legal_topic_name, topic_name_problem

from .harness import BrokerHarness, request
from .test_admin import create_topics


@pytest.mark.parametrize("name", ["nl\n", "\nnl", "a\nb", "cr\r", "x" * (MAX_TOPIC_NAME + 1), "", ".", ".."])
def test_illegal_names(name: str) -> None:
    assert not is_legal_topic_name(name)
    assert (topic_name_problem(name) or "").startswith("Topic name is invalid: ")


def test_legal_names() -> None:
    assert all(is_legal_topic_name(n) for n in ("a", "A.b_c-9", "x" * MAX_TOPIC_NAME, "..."))


def test_create_topics_refuses_a_trailing_newline() -> None:
    """The request that broke the checkpoints: INVALID_TOPIC_EXCEPTION, nothing created, no log opened."""
    h = BrokerHarness()
    (result,) = create_topics(h, {"name": "nl\n"})
    assert result.error_code == ErrorCode.invalid_topic_exception
    assert "nl\n" not in h.broker.image.topics and not [k for k in h.store.logs if k[0] == "nl\n"]


def test_metadata_auto_creation_refuses_a_trailing_newline() -> None:
    h = BrokerHarness()
    body = request(3, 12, topics=[{"name": "nl\n", "topic_id": None}], allow_auto_topic_creation=True,
                   include_topic_authorized_operations=False)
    answer = h.call(body)
    assert answer.topics[0].error_code == ErrorCode.invalid_topic_exception
    assert "nl\n" not in h.broker.image.topics


def test_the_seeded_defect_lets_the_newline_through() -> None:
    """``name-anchor`` brings the ``$`` anchor back: the checks above fail with it switched on."""
    with defects.seeded(defects.NAME_ANCHOR):
        assert is_legal_topic_name("nl\n")
    assert not is_legal_topic_name("nl\n")
