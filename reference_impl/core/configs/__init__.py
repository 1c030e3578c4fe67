"""Broker and topic configuration: Kafka's names, types, defaults, synonyms and sources.

:mod:`.model` says what a config is (type, source, definition, checks), :mod:`.tables` holds
Kafka's definitions (a data table), :mod:`.resolution` resolves and describes values
(``BrokerConfig``, a topic's default chain, DescribeConfigs rows).
"""
