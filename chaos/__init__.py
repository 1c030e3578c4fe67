"""chaos (see README)."""
