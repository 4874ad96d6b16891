"""speculative-infra: CDK constructs for LLMs on SageMaker with speculative decoding, checked at synth time.

Public names are loaded on first use, so `import speculative_infra` parses no catalog and does not
import aws-cdk-lib until a construct is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from speculative_infra._version import __version__

if TYPE_CHECKING:
    from speculative_infra.check import CheckResult, check
    from speculative_infra.constructs.async_inference import AsyncInferenceOptions
    from speculative_infra.constructs.batch_inference import BatchInference
    from speculative_infra.constructs.data_capture import DataCaptureOptions
    from speculative_infra.constructs.eagle_job import EagleOptimizationJob, TrainedDraft
    from speculative_infra.constructs.endpoint_benchmark import BenchmarkOptions, EndpointBenchmark
    from speculative_infra.constructs.endpoint_canary import CanaryOptions, EndpointCanary
    from speculative_infra.constructs.endpoint_dashboard import EndpointDashboard
    from speculative_infra.constructs.endpoint_load_test import EndpointLoadTest
    from speculative_infra.constructs.inference_component_endpoint import InferenceComponentEndpoint
    from speculative_infra.constructs.lmi_component import LmiInferenceComponent
    from speculative_infra.constructs.planned_workload import PlannedWorkload
    from speculative_infra.constructs.retraining_loop import EagleRetrainingLoop, ServedEagleHead
    from speculative_infra.constructs.slo_alarms import EndpointSlos, SloAlarms
    from speculative_infra.constructs.vllm_endpoint import DeploymentGuardrails, SpeculativeVllmEndpoint
    from speculative_infra.errors import CompatibilityError
    from speculative_infra.rules import Finding, Severity
    from speculative_infra.spec import (
        DeploymentSpec,
        EngineArgs,
        ScalingOptions,
        ScheduledCapacity,
        SpecError,
        SpeculativeConfig,
        load_spec,
    )

_EXPORTS = {
    "AsyncInferenceOptions": "speculative_infra.constructs.async_inference",
    "BatchInference": "speculative_infra.constructs.batch_inference",
    "DataCaptureOptions": "speculative_infra.constructs.data_capture",
    "BenchmarkOptions": "speculative_infra.constructs.endpoint_benchmark",
    "CanaryOptions": "speculative_infra.constructs.endpoint_canary",
    "EndpointCanary": "speculative_infra.constructs.endpoint_canary",
    "EndpointDashboard": "speculative_infra.constructs.endpoint_dashboard",
    "EndpointLoadTest": "speculative_infra.constructs.endpoint_load_test",
    "EndpointSlos": "speculative_infra.constructs.slo_alarms",
    "SloAlarms": "speculative_infra.constructs.slo_alarms",
    "CheckResult": "speculative_infra.check",
    "check": "speculative_infra.check",
    "CompatibilityError": "speculative_infra.errors",
    "DeploymentGuardrails": "speculative_infra.constructs.vllm_endpoint",
    "DeploymentSpec": "speculative_infra.spec",
    "EngineArgs": "speculative_infra.spec",
    "EagleOptimizationJob": "speculative_infra.constructs.eagle_job",
    "EagleRetrainingLoop": "speculative_infra.constructs.retraining_loop",
    "ServedEagleHead": "speculative_infra.constructs.retraining_loop",
    "EndpointBenchmark": "speculative_infra.constructs.endpoint_benchmark",
    "Finding": "speculative_infra.rules",
    "InferenceComponentEndpoint": "speculative_infra.constructs.inference_component_endpoint",
    "LmiInferenceComponent": "speculative_infra.constructs.lmi_component",
    "PlannedWorkload": "speculative_infra.constructs.planned_workload",
    "ScalingOptions": "speculative_infra.spec",
    "ScheduledCapacity": "speculative_infra.spec",
    "Severity": "speculative_infra.rules",
    "SpecError": "speculative_infra.spec",
    "SpeculativeConfig": "speculative_infra.spec",
    "SpeculativeVllmEndpoint": "speculative_infra.constructs.vllm_endpoint",
    "TrainedDraft": "speculative_infra.constructs.eagle_job",
    "load_spec": "speculative_infra.spec",
}

__all__ = [
    "AsyncInferenceOptions",
    "BatchInference",
    "BenchmarkOptions",
    "CanaryOptions",
    "CheckResult",
    "CompatibilityError",
    "DataCaptureOptions",
    "DeploymentGuardrails",
    "DeploymentSpec",
    "EagleOptimizationJob",
    "EagleRetrainingLoop",
    "EndpointBenchmark",
    "EndpointCanary",
    "EndpointDashboard",
    "EndpointLoadTest",
    "EndpointSlos",
    "EngineArgs",
    "Finding",
    "InferenceComponentEndpoint",
    "LmiInferenceComponent",
    "PlannedWorkload",
    "ScalingOptions",
    "ScheduledCapacity",
    "ServedEagleHead",
    "Severity",
    "SloAlarms",
    "SpecError",
    "SpeculativeConfig",
    "SpeculativeVllmEndpoint",
    "TrainedDraft",
    "__version__",
    "check",
    "load_spec",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'speculative_infra' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
