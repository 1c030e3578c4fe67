"""Toxiproxy: the project's compatible server (server.py), and finding or starting one (finder.py)."""
