"""Load specs for running load alongside a chaos campaign: checked by the load command's own parser."""

from __future__ import annotations

import pytest

from spark_load.spec import LoadSpecError, load_argv


def test_a_spec_becomes_the_load_commands_arguments() -> None:
    assert load_argv("records=2000, rate=100,verify,no-idempotence", "127.0.0.1:9092") == [
        "--target", "bootstrap:127.0.0.1:9092", "--records", "2000", "--rate", "100", "--verify",
        "--no-idempotence",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [("recrds=5", "unknown --recrds"), ("records=abc", "invalid int"), ("target=tansu", "set by the caller")],
)
def test_a_bad_spec_is_refused_with_the_reason(spec: str, message: str) -> None:
    with pytest.raises(LoadSpecError, match=message):
        load_argv(spec, "127.0.0.1:9092")
