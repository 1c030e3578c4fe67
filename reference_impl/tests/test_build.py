"""The generated builders build what the interpreted field plans build, for every class.

:func:`reference_impl.protocol.build.build` runs a function generated per entity class;
:func:`build_by_plan` walks the same field plans one by one and is the reference. Hypothesis draws
entities of every request and response class of every API and version; each is given to both as
plain nested dicts (as handlers write answers), as the entity itself, and as the entity of the
next or previous version (as the broker shapes an answer into the version asked for).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.protocol.build import BuildError, build, build_by_plan
from reference_impl.tests.kio_classes import EVERY_CLASS, entity_class


def _plain(value: Any) -> Any:
    """An entity as a handler would write it: dicts and lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _outcome(cls: Any, data: Any, how: Any) -> Any:
    try:
        return how(cls, data)
    except BuildError as exc:
        return ("refused", str(exc))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_class_is_built_as_the_field_plans_build_it(data: st.DataObject) -> None:
    key, version, direction = data.draw(st.sampled_from(EVERY_CLASS), label="api")
    cls = entity_class(key, version, direction)
    entity = data.draw(st.from_type(cls), label="entity")
    assert build(cls, _plain(entity)) == build_by_plan(cls, _plain(entity)) == entity
    assert build(cls, entity) == entity
    for other in (version - 1, version + 1):
        if (key, other, direction) in EVERY_CLASS:  # another version: fields dropped or defaulted
            target = entity_class(key, other, direction)
            assert _outcome(target, entity, build) == _outcome(target, entity, build_by_plan)


def test_a_missing_field_without_default_and_a_non_mapping_are_refused_alike() -> None:
    cls = entity_class(0, 9, "response")
    for how in (build, build_by_plan):
        with pytest.raises(BuildError, match=r"ProduceResponse\.responses has no default"):
            how(cls, {"throttle_time": 0})
        with pytest.raises(BuildError, match="needs a mapping"):
            how(cls, [1, 2])


def test_plain_values_are_converted_as_the_schema_says() -> None:
    """Integers become timedeltas and error codes, as handlers write them."""
    cls = entity_class(0, 9, "response")
    body = {
        "responses": [
            {
                "name": "t",
                "partition_responses": [{"index": 0, "error_code": 6, "base_offset": 3, "record_errors": []}],
            }
        ],
        "throttle_time": 250,
    }
    built: Any = build(cls, body)
    assert built == build_by_plan(cls, body)
    assert built.throttle_time.total_seconds() == 0.25
    assert built.responses[0].partition_responses[0].error_code.name == "not_leader_or_follower"
