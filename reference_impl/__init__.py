"""kafka-harness's reference broker: the executable specification and default target."""
