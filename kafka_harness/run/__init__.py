"""The main job (`kafka-harness run`): its plan, its stages, its summary."""
