"""Figures of the chapter "The roofline"."""

from __future__ import annotations

__all__: list[str] = []
