"""Transports: how requests reach the model server.

Imports of aiohttp and boto3 happen only in :func:`make_transport`, so a Lambda that bundles
boto3 but not aiohttp can use the engine.
"""

from __future__ import annotations

from ..clock import Clock
from ..config import BenchmarkConfig, HttpTarget, SageMakerTarget
from .base import TargetUnavailable, Transport, WireRequest

__all__ = ["TargetUnavailable", "Transport", "WireRequest", "make_transport"]


def make_transport(config: BenchmarkConfig, clock: Clock) -> Transport:
    target = config.target
    timeout = config.load.request_timeout_s
    if isinstance(target, SageMakerTarget):
        from .sagemaker import SageMakerTransport

        return SageMakerTransport(target, config.workload, timeout_s=timeout, clock=clock)
    if isinstance(target, HttpTarget):
        from .openai_http import OpenAIHttpTransport

        return OpenAIHttpTransport(target, config.workload, timeout_s=timeout, clock=clock)
    raise TypeError(f"unknown target {target!r}")
