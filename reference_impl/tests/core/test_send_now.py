"""``Broker.send_now``: a shell's sink for a response or a peer request the moment a step makes it
(issue 22: a follower's data no longer waits for the rest of the leader's step). It is used only
while nothing is queued ahead in the step, so the effects keep the order they have without it."""

from __future__ import annotations

from reference_impl.core.boundary import Effect, FrameReceived, ResumeReading, SendRequest, SendResponse
from reference_impl.protocol.codec import encode_request

from .harness import BrokerHarness, request


def _api_versions_frame() -> bytes:
    return encode_request(request(18, 3, client_software_name="t", client_software_version="1"), 7, "t")[4:]


def _with_sink() -> tuple[BrokerHarness, int, list[SendRequest | SendResponse]]:
    """A serving broker, a client connection, and the sink the broker's ``send_now`` fills."""
    h = BrokerHarness()
    h.settle()
    sent: list[SendRequest | SendResponse] = []
    h.broker.send_now = sent.append
    return h, h.connect(), sent


def test_a_response_made_with_nothing_queued_ahead_goes_to_the_sink_before_the_step_ends() -> None:
    h, cid, sent = _with_sink()
    step = h.broker.step(FrameReceived(connection_id=cid, frame=_api_versions_frame()), h.now_ms)
    assert len(sent) == 1 and isinstance(sent[0], SendResponse) and sent[0].connection_id == cid
    assert not any(isinstance(e, SendResponse) for e in step.effects)
    assert ResumeReading(connection_id=cid) in step.effects  # after the response, as without a sink


def test_a_response_behind_a_queued_effect_waits_its_turn_in_the_step() -> None:
    h, cid, sent = _with_sink()
    ahead: Effect = ResumeReading(connection_id=999)
    h.broker._outbox.append(ahead)  # something the step queued first
    step = h.broker.step(FrameReceived(connection_id=cid, frame=_api_versions_frame()), h.now_ms)
    assert sent == []
    kinds = [type(e) for e in step.effects]
    assert step.effects[0] == ahead and kinds.index(SendResponse) > 0
