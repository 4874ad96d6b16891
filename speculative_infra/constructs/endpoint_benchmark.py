"""EndpointBenchmark: benchmark an endpoint (or inference component) right after it is deployed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from aws_cdk import Annotations, Aws, CfnOutput, CfnResource, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct
from pydantic import BaseModel, ConfigDict, Field, model_validator

from speculative_infra.constructs.benchmark_target import Benchmarkable, BenchmarkTarget
from speculative_infra.constructs.custom_resource import handler_function, provider, stage_engine_handler
from speculative_infra.constructs.monitoring_target import BenchmarkSeries
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.options import parse_options_model
from speculative_infra.constructs.policies import INVOKE_ACTIONS
from speculative_infra.constructs.prop_checks import (
    BUCKET,
    construct_path,
    require_bool,
    require_jsii,
    require_mapping,
    require_str,
    wrong_type,
)
from speculative_infra.s3_uri import S3Location, parse_s3_uri

# CloudFormation waits at most an hour for a custom resource; one invocation lasts at most 15 minutes.
MAX_TOTAL = Duration.minutes(55)
MAX_INVOCATION_S = 15 * 60
PLANNING_MARGIN_S = 120  # state writes, start-up, and the estimate's own error
VCPU_MEMORY_MB = 1769  # Lambda gives one vCPU per 1,769 MB
STREAMS_PER_CORE = 256  # measured: one core drives 256 SageMaker streams with p99 client lag < 5 ms
# Attributes of a benchmark with a prediction, at its highest level: the planner's output tok/s and
# $ per million output tokens, and measured / predicted output tok/s.
PLAN_ATTRIBUTES = (
    "PredictedOutputThroughputHighest",
    "PredictedCostPerMillionOutputTokens",
    "MeasuredOverPredictedOutputThroughputHighest",
)


class BenchmarkSlo(BaseModel):
    """Per-request objectives; each level then reports goodput (requests meeting all of them)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    e2el_ms: float | None = Field(default=None, gt=0)


class BenchmarkRateSweep(BaseModel):
    """Find the highest request rate the endpoint sustains within the SLOs (as `bench --rate-sweep`):
    open-loop probes doubling from ``start_rate`` up to ``max_rate`` until one misses, then
    ``bisection_steps`` halvings of the gap between the last sustained and the first missed rate."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    start_rate: float = Field(gt=0, description="Requests/s of the first probe.")
    max_rate: float = Field(gt=0, description="The highest rate probed (bounds the run's time).")
    bisection_steps: int = Field(default=2, ge=0, le=6, description="Default: 2.")
    min_attainment: float = Field(
        default=0.9, gt=0, le=1, description="Share of a probe's requests within the SLOs. Default: 0.9."
    )

    @model_validator(mode="after")
    def _ordered(self) -> BenchmarkRateSweep:
        if self.max_rate < self.start_rate:
            raise ValueError(f"max_rate ({self.max_rate:g}) must be >= start_rate ({self.start_rate:g})")
        return self

    def doubling_rates(self) -> list[float]:
        """The probes before the first miss at most: start, 2 x start, ... capped at max_rate."""
        rates = [self.start_rate]
        while rates[-1] < self.max_rate:
            rates.append(min(rates[-1] * 2, self.max_rate))
        return rates


class BenchmarkOptions(BaseModel):
    """What the post-deploy benchmark measures, and the gates a deployment must pass."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    concurrency: list[int] = Field(default_factory=lambda: [1, 8, 32], min_length=1)
    request_rates: list[float] | None = Field(
        default=None,
        min_length=1,
        description="Open loop instead of `concurrency`: requests/s of each level (arrivals on an absolute "
        "clock, gamma gaps of shape `burstiness`). Default: none (closed loop).",
    )
    burstiness: float = Field(default=1.0, gt=0, description="Open loop: 1 is Poisson. Default: 1.")
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Open loop: cap on open requests. Default: none."
    )
    slo: BenchmarkSlo | None = Field(default=None, description="Objectives for goodput. Default: none.")
    rate_sweep: BenchmarkRateSweep | None = Field(
        default=None,
        description="Instead of `concurrency` / `request_rates`: the highest rate within `slo` (needs `slo`). "
        "Default: none.",
    )
    dataset_s3_uri: str | None = Field(
        default=None,
        description="Real prompts: an s3:// file or prefix of ShareGPT, JSON lines or SageMaker data capture "
        "(the Lambda gets read access to it). Default: generated prompts.",
    )
    dataset_format: Literal["auto", "sharegpt", "jsonl", "datacapture"] = "auto"
    output_length: Literal["forced", "record"] = Field(
        default="forced",
        description="With a dataset: `record` replays each record's length. Default: forced.",
    )
    input_tokens: int = Field(default=1000, ge=1)
    output_tokens: int = Field(default=560, ge=1)
    requests_per_level: int = Field(default=32, ge=1, description="Measured requests per level. Default: 32.")
    warmup_requests: int | None = Field(default=None, ge=0, description="Default: one per slot.")
    shared_prefix_tokens: int = Field(default=0, ge=0)
    request_timeout_seconds: float = Field(default=300, gt=0)
    expected_tpot_ms: float = Field(
        default=30.0,
        gt=0,
        description="Time per output token assumed at concurrency 1 to check that the sweep fits in "
        "CloudFormation's hour (the reference g7e + EAGLE3 measured ~12 ms). Default: 30.",
    )
    price_per_hour: float | None = Field(
        default=None, gt=0, description="Default: the catalog's on-demand price."
    )
    min_output_throughput: float | None = Field(
        default=None, gt=0, description="Gate: output tok/s at the highest level. Default: none."
    )
    max_p99_ttft_ms: float | None = Field(
        default=None, gt=0, description="Gate: p99 TTFT at the highest level. Default: none."
    )
    fail_on_error: bool = Field(
        default=False, description="Fail the deployment when the benchmark cannot measure."
    )

    @model_validator(mode="after")
    def _levels_positive(self) -> BenchmarkOptions:
        if any(c < 1 for c in self.concurrency):
            raise ValueError(f"concurrency levels must be >= 1, got {self.concurrency}")
        if self.request_rates is not None and any(not r > 0 for r in self.request_rates):
            raise ValueError(f"request rates must be > 0 (requests/s), got {self.request_rates}")
        open_loop = self.request_rates is not None or self.rate_sweep is not None
        if not open_loop and (self.max_concurrency is not None or self.burstiness != 1.0):
            raise ValueError(
                "max_concurrency and burstiness apply to request_rates or rate_sweep (open loop) only"
            )
        if self.rate_sweep is not None:
            if self.slo is None:
                raise ValueError("rate_sweep needs slo (a rate is sustained when its requests meet it)")
            if self.request_rates is not None:
                raise ValueError("rate_sweep chooses the rates: give request_rates or rate_sweep, not both")
        if self.shared_prefix_tokens >= self.input_tokens:
            raise ValueError("shared_prefix_tokens must be smaller than input_tokens")
        if self.dataset_s3_uri is not None:
            parse_s3_uri(self.dataset_s3_uri, "dataset_s3_uri")
            if self.shared_prefix_tokens:
                raise ValueError(
                    "shared_prefix_tokens does not apply with a dataset (the records are the prompts)"
                )
        elif self.dataset_format != "auto" or self.output_length != "forced":
            raise ValueError("dataset_format and output_length apply with dataset_s3_uri only")
        return self

    def warmup_for(self, concurrency: int) -> int:
        return self.warmup_requests if self.warmup_requests is not None else concurrency

    def _per_request_seconds(self, open_requests: float) -> float:
        return 1.0 + self.output_tokens * self.expected_tpot_ms / 1000.0 * (1 + (open_requests - 1) / 32)

    def estimated_level_seconds(self, concurrency: int) -> float:
        """A conservative estimate: waves of requests, each slowed as the batch grows."""
        requests = self.requests_per_level + self.warmup_for(concurrency)
        waves = math.ceil(requests / concurrency)
        return waves * self._per_request_seconds(concurrency)

    def estimated_rate_seconds(self, rate: float) -> float:
        """Open loop: the arrivals (the engine's default warm-up is one second of them, LoadConfig.warmup_for;
        not imported here, which would load the whole engine at synth time) plus the last request's own
        time, at the load the rate keeps open."""
        warmup = self.warmup_requests if self.warmup_requests is not None else max(1, round(rate))
        open_requests = min(self.max_concurrency or math.inf, max(1.0, rate * self._per_request_seconds(1)))
        return (self.requests_per_level + warmup) / rate + self._per_request_seconds(open_requests)

    def peak_open_requests(self) -> int:
        """Most requests open at once: the concurrency, or the cap (or what the top rate keeps open)."""
        rates = self.rate_sweep.doubling_rates() if self.rate_sweep is not None else self.request_rates
        if rates is None:
            return max(self.concurrency)
        uncapped = math.ceil(max(rates) * self._per_request_seconds(1))
        return min(self.max_concurrency or uncapped, uncapped)

    def level_estimates(self) -> list[tuple[str, float]]:
        if self.rate_sweep is not None:
            # Worst case: every doubling, then each bisection at whichever end of the range is slower.
            doublings = self.rate_sweep.doubling_rates()
            bisection = max(
                self.estimated_rate_seconds(doublings[0]), self.estimated_rate_seconds(doublings[-1])
            )
            return [(f"rate {r:g}/s", self.estimated_rate_seconds(r)) for r in doublings] + [
                (f"bisection {i + 1}", bisection) for i in range(self.rate_sweep.bisection_steps)
            ]
        if self.request_rates is not None:
            return [(f"rate {r:g}/s", self.estimated_rate_seconds(r)) for r in self.request_rates]
        return [(f"level {c}", self.estimated_level_seconds(c)) for c in self.concurrency]

    def estimated_total_seconds(self) -> float:
        return sum(seconds for _, seconds in self.level_estimates())


def parse_options(options: BenchmarkOptions | Mapping[str, Any] | None, path: str) -> BenchmarkOptions:
    return parse_options_model(BenchmarkOptions, options, path, "benchmark options")


def check_fits(options: BenchmarkOptions, path: str) -> None:
    """Options that cannot finish within CloudFormation's hour (or a level within one Lambda) fail at synth."""
    problems = []
    for name, seconds in options.level_estimates():
        if seconds > MAX_INVOCATION_S - PLANNING_MARGIN_S:
            problems.append(
                f"{name} is estimated at {seconds / 60:.1f} min; one level must fit one 15-minute Lambda"
            )
    total = options.estimated_total_seconds()
    if total > MAX_TOTAL.to_seconds() - PLANNING_MARGIN_S:
        problems.append(
            f"the sweep is estimated at {total / 60:.1f} min; CloudFormation waits at most 60 min "
            f"(budget {(MAX_TOTAL.to_seconds() - PLANNING_MARGIN_S) / 60:.0f} min)"
        )
    if problems:
        raise ValueError(
            f"{path}: benchmark options do not fit: " + "; ".join(problems) + " (estimated with "
            f"{options.expected_tpot_ms:g} ms per output token; lower requests_per_level, output_tokens or the "
            "number of levels, or run `speculative-infra bench` outside the deployment)"
        )


class EndpointBenchmark(Construct):
    """Runs the benchmark engine against an endpoint once it is in service, and on every change to it.

    Each is-complete invocation measures one concurrency level and keeps the sweep's state in S3, so the
    sweep can outlast one Lambda invocation; the whole resource stays within CloudFormation's hour.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: Benchmarkable,
        options: BenchmarkOptions | Mapping[str, Any] | None = None,
        results_bucket: s3.IBucket | None = None,
        results_prefix: str = "endpoint-benchmarks/",
        outputs: bool = True,
    ) -> None:
        """
        :param target: the endpoint or inference component to measure.
        :param options: workload, levels and gates. Default: BenchmarkOptions() (levels 1, 8, 32).
        :param results_bucket: Default: a bucket is created (encrypted, TLS only, retained).
        :param results_prefix: Default: "endpoint-benchmarks/"; each run writes under <prefix><run id>/.
        :param outputs: put the measured figures in stack outputs. Default: true.
        """
        where = construct_path(scope, construct_id)
        if not isinstance(target, Benchmarkable):
            raise wrong_type(
                where,
                "target",
                "a SpeculativeVllmEndpoint or an LmiInferenceComponent (anything with benchmark_target())",
                target,
            )
        require_mapping(options, "options", where, models=(BenchmarkOptions,))
        require_jsii(results_bucket, BUCKET, "results_bucket", where)
        require_str(results_prefix, "results_prefix", where, optional=False)
        require_bool(outputs, "outputs", where)
        super().__init__(scope, construct_id)
        self.options = parse_options(options, self.node.path)
        check_fits(self.options, self.node.path)
        info = target.benchmark_target()
        self.results_bucket = results_bucket or s3.Bucket(
            self,
            "Results",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
        )
        if results_bucket is None:
            acknowledge(
                self.results_bucket,
                "S1",
                "Holds only benchmark results written by this construct's Lambda; object access is "
                "limited to its role and the results are not sensitive.",
            )
        prefix = results_prefix if results_prefix.endswith("/") else results_prefix + "/"
        memory = VCPU_MEMORY_MB * max(1, math.ceil(self.options.peak_open_requests() / STREAMS_PER_CORE))
        code = lambda_.Code.from_asset(stage_engine_handler("endpoint_benchmark"))
        functions = {}
        for name, construct_id_, timeout, size in (
            ("on_event", "OnEvent", Duration.minutes(1), 256),
            ("is_complete", "IsComplete", Duration.minutes(15), memory),
        ):
            fn = handler_function(
                self,
                construct_id_,
                handler=f"endpoint_benchmark.handler.{name}",
                description=f"EndpointBenchmark {name}",
                timeout=timeout,
                memory_size=size,
                code=code,
            )
            functions[name] = fn
            fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject", "s3:PutObject"],
                    resources=[self.results_bucket.arn_for_objects(f"{prefix}*")],
                )
            )
            assert fn.role is not None
            acknowledge(
                fn.role,
                "IAM5",
                "Objects under the benchmark results prefix only (one folder per run).",
                resource=self.results_bucket.arn_for_objects(f"{prefix}*"),
            )
        invoke = functions["is_complete"]
        invoke.add_to_role_policy(iam.PolicyStatement(actions=INVOKE_ACTIONS, resources=info.invoke_arns))
        if self.options.dataset_s3_uri is not None:
            self._grant_dataset(invoke, parse_s3_uri(self.options.dataset_s3_uri, "dataset_s3_uri"))
        self.provider = provider(
            self,
            "Provider",
            on_event=functions["on_event"],
            is_complete=functions["is_complete"],
            query_interval=Duration.seconds(10),
            total_timeout=MAX_TOTAL,
        )
        price = self.options.price_per_hour or info.usd_per_hour
        config = {
            "target": {
                "kind": "sagemaker",
                "endpoint_name": info.endpoint_name,
                "inference_component_name": info.component_name,
                "container": info.container,
                "client": "boto3",  # AWS's own client; the levels a Lambda runs are small
            },
            "workload": {
                "input_tokens": self.options.input_tokens,
                "output_tokens": self.options.output_tokens,
                "shared_prefix_tokens": self.options.shared_prefix_tokens,
                "dataset": None
                if self.options.dataset_s3_uri is None
                else {
                    "path": self.options.dataset_s3_uri,
                    "format": self.options.dataset_format,
                    "output_length": self.options.output_length,
                },
            },
            "load": {
                "concurrency_levels": self.options.concurrency,
                **(
                    {}
                    if self.options.request_rates is None and self.options.rate_sweep is None
                    else {
                        "request_rates": self.options.request_rates,
                        "burstiness": self.options.burstiness,
                        "max_concurrency": self.options.max_concurrency,
                    }
                ),
                "requests_per_level": self.options.requests_per_level,
                "warmup_requests": self.options.warmup_requests,
                "request_timeout_s": self.options.request_timeout_seconds,
            },
            "cost": {"price_per_hour": price, "instance_count": info.instance_count},
            "slo": self.options.slo.model_dump() if self.options.slo is not None else None,
            "rate_sweep": None
            if self.options.rate_sweep is None
            else {
                "start_rate": self.options.rate_sweep.start_rate,
                "max_rate": self.options.rate_sweep.max_rate,
                "bisection_steps": self.options.rate_sweep.bisection_steps,
                "min_attainment": self.options.rate_sweep.min_attainment,
            },
            "label": info.label,
        }
        gates = {
            "min_output_throughput": self.options.min_output_throughput,
            "max_p99_ttft_ms": self.options.max_p99_ttft_ms,
        }
        self.prediction = self._prediction(info, price)
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::EndpointBenchmark",
            properties={
                **(
                    {"Prediction": Stack.of(self).to_json_string(self.prediction)}
                    if self.prediction is not None
                    else {}
                ),
                "Config": Stack.of(self).to_json_string(config),
                "Gates": Stack.of(self).to_json_string(gates),
                "FailOnError": "true" if self.options.fail_on_error else "false",
                "ResultsBucket": self.results_bucket.bucket_name,
                "ResultsPrefix": prefix,
                # Reruns when the deployment changes (a new endpoint config or model), never otherwise.
                "DeploymentId": info.deployment_id,
            },
        )
        self.resource.node.add_dependency(info.depends_on)
        self.results_s3_uri = self.resource.get_att_string("ResultsS3Uri")
        self.status = self.resource.get_att_string("Status")
        self.attributes = {
            key: self.resource.get_att_string(key)
            for key in (
                "OutputThroughputLowest",
                "OutputThroughputHighest",
                "P50TtftMsLowest",
                "P50TtftMsHighest",
                "P99TtftMsLowest",
                "P99TtftMsHighest",
                "CostPerMillionOutputTokens",
                "RequestGoodputHighest",
            )
        }
        # The rate sweep's answer, requests/s ("" without a sweep or when even start_rate missed).
        self.max_sustained_rate = self.resource.get_att_string("MaxSustainedRate")
        if self.options.rate_sweep is not None:
            self.attributes["MaxSustainedRate"] = self.max_sustained_rate
        if self.prediction is not None:  # the plan beside the measurement: how far off it was
            for key in PLAN_ATTRIBUTES:
                self.attributes[key] = self.resource.get_att_string(key)
        # Mean tokens per chunk at the lowest level ("0" when not measured: an alarm against it never fires).
        self.tokens_per_chunk_baseline = self.resource.get_att_string("TokensPerChunkBaseline")
        if outputs:
            CfnOutput(self, "ResultsS3UriOutput", value=self.results_s3_uri, description="Benchmark results")
            CfnOutput(self, "StatusOutput", value=self.status)
            for key, value in self.attributes.items():
                CfnOutput(self, f"{key}Output", value=value)

    def _prediction(self, info: BenchmarkTarget, price: float | None) -> dict[str, Any] | None:
        """The planner's figures for this benchmark's levels, or None (with an info annotation saying why)."""
        reason: str | None = None
        if info.predict is None:
            reason = "the target offers no prediction"
        elif self.options.dataset_s3_uri is not None:
            reason = "the prompts come from a dataset, whose token counts are not known at synth"
        elif self.options.rate_sweep is not None:
            reason = "a rate sweep chooses its rates while it runs"
        elif info.instance_count != 1:
            reason = f"the prediction covers one instance and the endpoint starts with {info.instance_count}"
        else:
            open_loop = self.options.request_rates is not None
            found = info.predict(
                input_tokens=self.options.input_tokens,
                output_tokens=self.options.output_tokens,
                prefix_tokens=self.options.shared_prefix_tokens,
                concurrency=[] if open_loop else self.options.concurrency,
                request_rates=self.options.request_rates or [],
                usd_per_hour=price,
            )
            if isinstance(found, dict):
                return found
            reason = found or "the planner gave none"
        Annotations.of(self).add_info(f"EndpointBenchmark publishes no predicted figures: {reason}")
        return None

    def series(self) -> BenchmarkSeries:
        """The EMF series each run publishes (one per level), for dashboards and alarms."""
        dimension: Literal["Concurrency", "RequestRate"]
        if self.options.rate_sweep is not None:  # the doublings; bisection probes are in the results only
            dimension, values = "RequestRate", [f"{r:g}" for r in self.options.rate_sweep.doubling_rates()]
        elif self.options.request_rates is not None:
            dimension, values = "RequestRate", [f"{r:g}" for r in self.options.request_rates]
        else:
            dimension, values = "Concurrency", [str(c) for c in self.options.concurrency]
        return BenchmarkSeries(
            dimension, values, self.tokens_per_chunk_baseline, self.require_tokens_per_chunk_baseline
        )

    def require_tokens_per_chunk_baseline(self) -> None:
        """Declare that the stack reads TokensPerChunkBaseline. A stack deployed before the attribute
        existed keeps its old response (no rerun without a new deployment), where GetAtt would fail; the
        declaration changes the resource's properties, so that update reruns the benchmark once."""
        cfn = self.resource.node.default_child
        assert isinstance(cfn, CfnResource)
        cfn.add_property_override("Attributes", "TokensPerChunkBaseline")

    def _grant_dataset(self, function: lambda_.IFunction, dataset: S3Location) -> None:
        """Read access to the dataset prefix only (list under it, get its objects)."""
        bucket_arn = dataset.bucket_arn(Aws.PARTITION)
        objects = dataset.object_arn_pattern(Aws.PARTITION)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [dataset.key_prefix_pattern()]}},
            )
        )
        function.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[objects]))
        role = function.role
        assert role is not None
        acknowledge(role, "IAM5", "Objects under the benchmark dataset prefix only.", resource=objects)
