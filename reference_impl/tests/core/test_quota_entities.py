"""Client quota filter matching (reference_impl/core/quota_entities.py)."""

import pytest

from reference_impl.core.quota_entities import (
    ANY,
    DEFAULT,
    EXACT,
    Component,
    InvalidFilter,
    check_filter,
    matches,
)

ALICE = {"user": "alice"}
ALICE_APP = {"user": "alice", "client-id": "app"}
DEFAULT_USER = {"user": None}


def test_exact_default_any_and_strict() -> None:
    exact = check_filter([Component("user", EXACT, "alice")])
    assert matches(ALICE, exact, strict=True)
    assert not matches(ALICE_APP, exact, strict=True)
    assert matches(ALICE_APP, exact, strict=False)
    assert not matches(DEFAULT_USER, exact, strict=False)
    default = check_filter([Component("user", DEFAULT)])
    assert matches(DEFAULT_USER, default, strict=True)
    assert not matches(ALICE, default, strict=True)
    anyone = check_filter([Component("user", ANY)])
    assert matches(DEFAULT_USER, anyone, strict=True) and matches(ALICE, anyone, strict=True)
    assert not matches({"client-id": "app"}, anyone, strict=False)


@pytest.mark.parametrize(
    "components",
    [
        [Component("user", ANY), Component("user", DEFAULT)],
        [Component("user", EXACT)],
        [Component("ip", ANY), Component("client-id", ANY)],
        [Component("", ANY)],
        [Component("user", DEFAULT, "alice")],
        [Component("user", ANY, "alice")],
        [Component("user", 7)],
    ],
)
def test_refused_filters(components: list[Component]) -> None:
    with pytest.raises(InvalidFilter):
        check_filter(components)


def test_unknown_entity_type_is_unsupported_version() -> None:
    with pytest.raises(InvalidFilter) as refused:
        check_filter([Component("custom", ANY)])
    assert refused.value.error == "UNSUPPORTED_VERSION"


def test_no_components_describes_all_unless_strict() -> None:
    assert matches(ALICE_APP, check_filter([]), strict=False)
    assert not matches(ALICE_APP, check_filter([]), strict=True)
