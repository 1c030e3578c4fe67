"""Delayed-operation timing: a hierarchical timing wheel advanced by the caller's clock."""

from .wheel import TimerTask, TimingWheel

__all__ = ["TimerTask", "TimingWheel"]
