"""The controller quorum in the simulator: controllers and broker stubs, metadata invariants, the fuzz."""
