"""Figures of the chapter "The memory wall"."""

from __future__ import annotations

__all__: list[str] = []
