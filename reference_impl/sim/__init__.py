"""A deterministic simulator: seeded scheduler, virtual clock, faulty network and disks."""
