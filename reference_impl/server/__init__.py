"""The asyncio shell around the sans-IO broker: sockets, timers, files, signals.

It holds no Kafka logic: it cuts bytes into frames, hands them to
:meth:`reference_impl.core.broker.Broker.step` with the current time, writes
the responses back, closes what the broker says to close, and wakes the
broker when its next deadline comes.
"""
