"""Transports: how requests reach the model server.

The asyncio transports need only the standard library (and botocore for SageMaker); boto3 is imported
only when a target asks for its client, in :func:`make_transport`.
"""

from __future__ import annotations

from ..clock import Clock
from ..config import BenchmarkConfig, HttpTarget, SageMakerTarget
from .base import TargetUnavailable, Transport, WireRequest

__all__ = ["TargetUnavailable", "Transport", "WireRequest", "make_transport", "sagemaker_client"]


def sagemaker_client(target: SageMakerTarget) -> str:
    """The SageMaker client a target gets: ``auto`` is asyncio (standard library and botocore only)."""
    return "asyncio" if target.client == "auto" else target.client


def make_transport(config: BenchmarkConfig, clock: Clock) -> Transport:
    target = config.target
    timeout = config.load.request_timeout_s
    if isinstance(target, SageMakerTarget):
        if sagemaker_client(target) == "asyncio":
            from .sagemaker_async import AsyncSageMakerTransport

            return AsyncSageMakerTransport(target, config.workload, timeout_s=timeout, clock=clock)
        from .sagemaker import SageMakerTransport

        return SageMakerTransport(target, config.workload, timeout_s=timeout, clock=clock)
    if isinstance(target, HttpTarget):
        from .openai_http import OpenAIHttpTransport

        return OpenAIHttpTransport(target, config.workload, timeout_s=timeout, clock=clock)
    raise TypeError(f"unknown target {target!r}")
