"""Transports: how requests reach the model server.

Imports of aiohttp and boto3 happen only in :func:`make_transport`, so a Lambda that bundles
boto3 but not aiohttp can use the engine.
"""

from __future__ import annotations

import importlib.util

from ..clock import Clock
from ..config import BenchmarkConfig, HttpTarget, SageMakerTarget
from .base import TargetUnavailable, Transport, WireRequest

__all__ = ["TargetUnavailable", "Transport", "WireRequest", "make_transport", "sagemaker_client"]


def sagemaker_client(target: SageMakerTarget) -> str:
    """The SageMaker client a target gets: ``auto`` is asyncio where aiohttp is installed."""
    if target.client != "auto":
        return target.client
    return "asyncio" if importlib.util.find_spec("aiohttp") is not None else "boto3"


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
