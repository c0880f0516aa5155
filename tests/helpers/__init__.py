"""Shared test helpers (process launch, free ports). Imported as ``tests.helpers``."""
