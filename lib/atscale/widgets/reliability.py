"""Explorers of the chapter "Reliability"."""

from __future__ import annotations

__all__: list[str] = []
