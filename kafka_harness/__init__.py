"""The ``kafka-harness`` command line: one entry point over every part of the project."""
