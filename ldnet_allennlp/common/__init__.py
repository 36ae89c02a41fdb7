"""Helpers shared by several areas (no registered components)."""
