"""The feature table (reference_impl/core/metadata/features.py)."""

from reference_impl.core.metadata import features


def test_bootstrap_levels_are_supported_and_zero_is_not_finalized() -> None:
    for f in features.FEATURES.values():
        assert f.supports(f.bootstrap_level), f.name
        assert not f.supports(f.max_level + 1), f.name
    levels = features.bootstrap_levels()
    assert levels["metadata.version"] == 25
    assert levels["group.version"] == 1
    assert levels["transaction.version"] == 1
    assert "share.version" not in levels
    assert "kraft.version" not in levels
