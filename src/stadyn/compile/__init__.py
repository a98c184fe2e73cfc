"""Whole-step capture: forward + backward + solver update as one (compiled) program."""

from ._step import CompiledStep, compile_step

__all__ = ["compile_step", "CompiledStep"]
