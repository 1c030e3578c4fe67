"""The simulator's engine: a seeded scheduler and virtual clock, a faulty network, TCP, the loop."""
