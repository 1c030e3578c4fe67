"""The sans-IO broker: state machines that take events and ``now_ms`` and return effects.

Nothing here opens sockets, reads the wall clock or sleeps; the asyncio shell
(:mod:`reference_impl.server`) and the deterministic simulator drive it.
Storage is reached through the ports in :mod:`reference_impl.core.ports`.
"""
