"""The seeded-defect switch: names are checked, and a test's switch is undone after it."""

from __future__ import annotations

import pytest

from reference_impl import defects
from reference_impl.core.configs.model import ConfigError
from reference_impl.core.configs.resolution import BrokerConfig


def test_unknown_defect_is_refused_by_name() -> None:
    with pytest.raises(defects.UnknownDefectError, match="no-such-bug"):
        defects.parse("name-anchor, no-such-bug")


def test_seeded_switches_on_for_the_block_only() -> None:
    assert not defects.enabled(defects.NAME_ANCHOR)
    with defects.seeded(defects.NAME_ANCHOR):
        assert defects.enabled(defects.NAME_ANCHOR)
        assert not defects.enabled(defects.UNBOUNDED_DECODE)
    assert not defects.enabled(defects.NAME_ANCHOR)


def test_broker_config_takes_known_defects_only() -> None:
    config = BrokerConfig.parse(1, [f"{defects.DEFECTS_CONFIG}=name-anchor,unbounded-decode"])
    assert defects.parse(config.get(defects.DEFECTS_CONFIG) or "") == {"name-anchor", "unbounded-decode"}
    with pytest.raises(ConfigError, match=r"reference\.defects"):
        BrokerConfig.parse(1, [f"{defects.DEFECTS_CONFIG}=bogus"])
