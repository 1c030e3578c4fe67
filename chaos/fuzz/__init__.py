"""``kafka-harness fuzz``: a structure-aware protocol fuzzer for any Kafka-compatible target (issue 17).

Requests are generated from kio's schemas (:mod:`.schema`, :mod:`.generate`), encoded by an encoder
of our own that remembers where every length, count and integer sits (:mod:`.encode`), mutated at
those sites and at the byte level (:mod:`.mutate`), sent over many connections at once
(:mod:`.engine`) and each outcome classified (:mod:`.classify`). A durability canary
(:mod:`.canary`) must survive the run; crashes and hangs are shrunk (:mod:`.shrink`) and written
as replayable files (:mod:`.artifacts`). The command is :mod:`.cli`.
"""
