"""A forwarded admin request answered NOT_CONTROLLER is sent again to the controller then known,
as Kafka's NodeToControllerChannelManager does, within the request's timeout; other answers, and a
NOT_CONTROLLER with no time or no other controller left, reach the client as they came."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, cast

from kio.schema.delete_acls.v3.request import DeleteAclsRequest
from kio.schema.delete_acls.v3.response import DeleteAclsFilterResult, DeleteAclsResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from reference_impl.core.handlers.forwarding import RETRY_BACKOFF_MS, forward, says_not_controller
from reference_impl.core.handlers.registry import Deferred
from reference_impl.core.purgatory import Purgatory
from reference_impl.timer.wheel import TimingWheel

REQUEST = DeleteAclsRequest(filters=())


def _answer(code: ErrorCode) -> DeleteAclsResponse:
    result = DeleteAclsFilterResult(error_code=code, error_message=None, matching_acls=())
    no_throttle = i32Timedelta.parse(datetime.timedelta(0))
    return DeleteAclsResponse(throttle_time=no_throttle, filter_results=(result,))


@dataclass
class FakeHost:
    now_ms: int = 1_000
    purgatory: Purgatory = field(default_factory=lambda: Purgatory(TimingWheel(start_ms=1_000)))
    sent: list[tuple[int, Any]] = field(default_factory=list)

    def send_request(self, node_id: int, body: Any, on_done: Any, **_: Any) -> bool:
        self.sent.append((node_id, on_done))
        return True

    def tick(self, ms: int) -> None:
        self.now_ms += ms
        self.purgatory.advance(self.now_ms)


@dataclass
class FakeContext:
    received_ms: int = 1_000
    answers: list[Any] = field(default_factory=list)

    def respond(self, body: Any) -> None:
        self.answers.append(body)


def _forward(host: FakeHost, ctx: FakeContext, controllers: list[int]) -> None:
    def retarget() -> tuple[int, tuple[str, int]] | None:
        return (controllers[0], ("127.0.0.1", 9000 + controllers[0])) if controllers else None

    reply = forward(
        cast(Any, host), cast(Any, ctx), REQUEST, 1, ("127.0.0.1", 9001), lambda: _answer(ErrorCode.none),
        30_000, retarget,
    )  # fmt: skip
    assert isinstance(reply, Deferred)
    host.purgatory.try_complete_else_watch(reply.op, reply.keys, host.now_ms)


def test_not_controller_is_sent_again_to_the_new_controller_after_a_back_off() -> None:
    host, ctx, controllers = FakeHost(), FakeContext(), [2]
    _forward(host, ctx, controllers)
    (_, first), = host.sent
    first(_answer(ErrorCode.not_controller), None)
    assert ctx.answers == [] and len(host.sent) == 1  # waits out the back-off
    host.tick(RETRY_BACKOFF_MS + 1)
    assert [node for node, _ in host.sent] == [1, 2]
    host.sent[1][1](_answer(ErrorCode.none), None)
    host.purgatory.advance(host.now_ms)
    assert [a.filter_results[0].error_code for a in ctx.answers] == [ErrorCode.none]


def test_not_controller_reaches_the_client_when_no_controller_is_known_or_time_is_out() -> None:
    host, ctx = FakeHost(), FakeContext()
    _forward(host, ctx, [])
    host.sent[0][1](_answer(ErrorCode.not_controller), None)
    host.tick(RETRY_BACKOFF_MS + 1)
    assert [a.filter_results[0].error_code for a in ctx.answers] == [ErrorCode.not_controller]

    late, late_ctx = FakeHost(), FakeContext()
    _forward(late, late_ctx, [2])
    late.now_ms += 30_000  # the request's own timeout is spent
    late.sent[0][1](_answer(ErrorCode.not_controller), None)
    assert [a.filter_results[0].error_code for a in late_ctx.answers] == [ErrorCode.not_controller]
    assert len(late.sent) == 1


def test_other_errors_are_relayed_at_once() -> None:
    host, ctx = FakeHost(), FakeContext()
    _forward(host, ctx, [2])
    host.sent[0][1](_answer(ErrorCode.security_disabled), None)
    assert [a.filter_results[0].error_code for a in ctx.answers] == [ErrorCode.security_disabled]
    assert says_not_controller(_answer(ErrorCode.not_controller))
    assert not says_not_controller(_answer(ErrorCode.none))
