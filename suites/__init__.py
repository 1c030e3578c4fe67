"""Target-agnostic pytest suites: conformance, clients, property, chaos, load."""
