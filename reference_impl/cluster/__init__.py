"""The reference cluster as processes: ``kafka-harness cluster up|down|kill|restart|pause|resume|stop``.

It starts ``kafka-harness broker`` processes and talks to them only through
the wire (Metadata, to see that they agree), so it imports nothing of the
broker's core.
"""
