"""Octant's worker: a process that owns device memory for a Go kernels.Backend (kernels/worker).

Standard library only; torch is imported in torch mode alone. main.py is the request loop,
protocol.py the framing, arena.py the device memory and its guards. docs/worker.md is the
specification.
"""
