"""Operator commands on any target through the protocol: topics, groups, offsets.

They use confluent-kafka's AdminClient (librdkafka negotiates versions with
whatever broker it meets); a broker that lacks an API gets its error printed
with the Kafka error name, not a traceback.
"""
