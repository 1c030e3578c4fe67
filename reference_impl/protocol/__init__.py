"""The wire layer: framing, headers, kio entity lookup and codecs, record batches.

Imports nothing else from the project, so the harness's raw client, the
broker and the simulator can all depend on it.
"""
