"""The engine's BenchmarkConfig from parsed `bench` arguments, and the checks argparse cannot make.

argparse checks each value alone; combination_problem checks them together (an option only valid with
another), and the engine's own validation (ConfigError) is reported under the option it came from.
"""

from __future__ import annotations

import argparse
from typing import Literal

from speculative_infra.benchmark.config import (
    DEFAULT_CONCURRENCY_LEVELS,
    BenchmarkConfig,
    ConfigError,
    CostConfig,
    DatasetConfig,
    HttpTarget,
    LoadConfig,
    RateSweepConfig,
    SageMakerTarget,
    SloConfig,
    WorkloadConfig,
)

# Which option a config field comes from, to name it in error messages.
_OPTION_FOR_FIELD = {
    "endpoint_name": "--endpoint",
    "inference_component_name": "--inference-component",
    "region": "--region",
    "container": "--container",
    "endpoint_url": "--endpoint-url",
    "base_url": "--url",
    "api": "--api",
    "model": "--model",
    "input_tokens": "--input-tokens",
    "output_tokens": "--output-tokens",
    "shared_prefix_tokens": "--shared-prefix-tokens",
    "seed": "--seed",
    "path": "--dataset",
    "format": "--dataset-format",
    "output_length": "--output-length",
    "temperature": "--temperature",
    "concurrency_levels": "--concurrency",
    "request_rates": "--request-rate",
    "burstiness": "--burstiness",
    "max_concurrency": "--max-concurrency",
    "ttft_ms": "--slo",
    "tpot_ms": "--slo",
    "e2el_ms": "--slo",
    "client": "--sagemaker-client",
    "workers": "--workers",
    "start_rate": "--rate-sweep",
    "max_rate": "--rate-sweep-max",
    "bisection_steps": "--rate-sweep-steps",
    "min_attainment": "--slo-attainment",
    "rate_sweep": "--rate-sweep",
    "requests_per_level": "--requests-per-level",
    "warmup_requests": "--warmup",
    "request_timeout_s": "--timeout",
    "time_budget_s": "--time-budget",
    "ramp_up_s": "--ramp-up",
    "max_retries": "--max-retries",
    "price_per_hour": "--price-per-hour",
    "instance_count": "--instance-count",
    "label": "--label",
    "mode": "--mode",
}


def validation_message(error: ConfigError) -> str:
    # "load.concurrency_levels[1]" -> "concurrency_levels" -> "--concurrency"
    field = error.field.rsplit(".", 1)[-1].split("[", 1)[0]
    option = _OPTION_FOR_FIELD.get(field, field or "arguments")
    return f"argument {option}: {error.reason}"


def _batch_mode_problem(args: argparse.Namespace) -> str | None:
    if args.dataset is None:
        return "argument --mode batch: requires --dataset (the records the transform job will read)"
    if args.concurrency is None or len(args.concurrency) != 1:
        return (
            "argument --mode batch: requires one --concurrency N, the job's MaxConcurrentTransforms x its "
            "instance count (BatchInference.max_concurrent_transforms)"
        )
    not_in_batch = {
        "--request-rate": args.request_rate is not None,
        "--rate-sweep": args.rate_sweep is not None,
        "--requests-per-level": args.requests_per_level is not None,
        "--reuse-prompts": args.reuse_prompts,
        "--no-sustain": args.no_sustain,
    }
    for option, given in not_in_batch.items():
        if given:
            return (
                f"argument {option}: not with --mode batch (the run sends every record once, as the job does)"
            )
    return None


def combination_problem(args: argparse.Namespace) -> str | None:
    """The first option given without the one it needs (or with one it excludes), as a usage error."""
    if args.mode == "batch":
        problem = _batch_mode_problem(args)
        if problem is not None:
            return problem
    sagemaker_only = {
        "--inference-component": args.inference_component,
        "--region": args.region,
        "--container": args.container,
        "--endpoint-url": args.endpoint_url,
    }
    if args.url is not None:
        for option, value in sagemaker_only.items():
            if value is not None:
                return f"argument {option}: only valid with --endpoint"
    if args.endpoint is not None and args.api is not None:
        return "argument --api: only valid with --url"
    if args.request_rate is None:
        if args.max_concurrency is not None:
            return (
                "argument --max-concurrency: only valid with --request-rate (in a closed loop, --concurrency)"
            )
        if args.burstiness != 1.0:
            return "argument --burstiness: only valid with --request-rate"
    elif args.ramp_up:
        return "argument --ramp-up: only valid in a closed loop (without --request-rate)"
    if args.rate_sweep is not None:
        if args.slo is None:
            return "argument --rate-sweep: requires --slo (a rate is sustained when its requests meet it)"
        if args.request_rate is not None:
            return "argument --rate-sweep: not with --request-rate (the sweep chooses the rates)"
    elif args.rate_sweep_max is not None:
        return "argument --rate-sweep-max: only valid with --rate-sweep"
    if args.sagemaker_client is not None and args.endpoint is None:
        return "argument --sagemaker-client: only valid with --endpoint"
    return workload_and_cost_problem(args)


def workload_and_cost_problem(args: argparse.Namespace) -> str | None:
    """combination_problem of the options from bench_options.add_workload_arguments and add_cost_arguments
    (and args.region, for the catalog's price)."""
    if args.instance_count is not None and args.price_per_hour is None and args.instance_type is None:
        return "argument --instance-count: requires --price-per-hour or --instance-type"
    if args.instance_type is not None and args.price_per_hour is None and catalog_price(args) is None:
        return (
            f"argument --instance-type: the catalog has no price for {args.instance_type!r}; "
            "give --price-per-hour (`speculative-infra catalog instances` lists the known prices)"
        )
    if args.dataset is None and (args.dataset_format != "auto" or args.output_length is not None):
        return "arguments --dataset-format and --output-length: only valid with --dataset"
    if args.dataset is not None and args.shared_prefix_tokens:
        return "argument --shared-prefix-tokens: not with --dataset (the records are the prompts)"
    if args.shared_prefix_tokens >= args.input_tokens:
        return (
            f"argument --shared-prefix-tokens: must be smaller than --input-tokens ({args.input_tokens}), "
            f"got {args.shared_prefix_tokens}"
        )
    return None


def catalog_price(args: argparse.Namespace) -> float | None:
    """On-demand $/hour of --instance-type from the catalog (the region's price list when there is one)."""
    if args.instance_type is None:
        return None
    from speculative_infra.catalog import load_catalog  # only when asked: keeps `bench` start-up light

    price = load_catalog().price(args.instance_type, args.region)
    return price.usd_per_hour if price is not None else None


def output_length(args: argparse.Namespace, *, batch: bool) -> Literal["forced", "record"]:
    """--output-length, else its default: a batch job's records keep their own lengths."""
    if args.output_length is not None:
        return args.output_length  # type: ignore[no-any-return]
    return "record" if batch else "forced"


def workload_config(args: argparse.Namespace, *, batch: bool = False) -> WorkloadConfig:
    """From bench_options.add_workload_arguments; ``batch``: bench --mode batch."""
    return WorkloadConfig(
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        shared_prefix_tokens=args.shared_prefix_tokens,
        seed=args.seed,
        fresh_prompts_per_level=not args.reuse_prompts,
        force_output_length=not args.no_force_length,
        temperature=args.temperature,
        dataset=DatasetConfig(
            path=args.dataset, format=args.dataset_format, output_length=output_length(args, batch=batch)
        )
        if args.dataset is not None
        else None,
    )


def slo_config(args: argparse.Namespace) -> SloConfig | None:
    """From --slo (bench_options.add_slo_and_timeout_arguments)."""
    return SloConfig(**args.slo) if args.slo else None


def cost_config(args: argparse.Namespace) -> CostConfig:
    """From bench_options.add_cost_arguments, and args.region for the catalog's price (None: the default)."""
    return CostConfig(
        price_per_hour=args.price_per_hour if args.price_per_hour is not None else catalog_price(args),
        instance_count=args.instance_count or 1,
    )


def _target_config(args: argparse.Namespace) -> SageMakerTarget | HttpTarget:
    if args.endpoint is not None:
        return SageMakerTarget(
            endpoint_name=args.endpoint,
            inference_component_name=args.inference_component,
            region=args.region,
            container=args.container or "vllm",
            endpoint_url=args.endpoint_url,
            model=args.model,
            client=args.sagemaker_client or "auto",
        )
    return HttpTarget(base_url=args.url, api=args.api or "chat", model=args.model)


def _load_config(args: argparse.Namespace, batch_records: int | None) -> LoadConfig:
    return LoadConfig(
        concurrency_levels=args.concurrency or DEFAULT_CONCURRENCY_LEVELS,
        request_rates=args.request_rate,
        burstiness=args.burstiness,
        max_concurrency=args.max_concurrency,
        workers=args.workers,
        requests_per_level=batch_records if batch_records is not None else args.requests_per_level,
        warmup_requests=args.warmup,
        request_timeout_s=args.timeout,
        time_budget_s=args.time_budget,
        ramp_up_s=args.ramp_up,
        sustain_load=not args.no_sustain and batch_records is None,
        max_retries=args.max_retries,
    )


def _rate_sweep_config(args: argparse.Namespace) -> RateSweepConfig | None:
    if args.rate_sweep is None:
        return None
    return RateSweepConfig(
        start_rate=args.rate_sweep,
        max_rate=args.rate_sweep_max,
        bisection_steps=args.rate_sweep_steps,
        min_attainment=args.slo_attainment,
    )


def build_config(args: argparse.Namespace, *, batch_records: int | None = None) -> BenchmarkConfig:
    """The engine configuration from parsed ``bench`` arguments (raises ConfigError naming the field).
    ``batch_records``: --mode batch, the dataset's size (each record is sent once)."""
    return BenchmarkConfig(
        target=_target_config(args),
        workload=workload_config(args, batch=args.mode == "batch"),
        load=_load_config(args, batch_records),
        cost=cost_config(args),
        slo=slo_config(args),
        rate_sweep=_rate_sweep_config(args),
        label=args.label,
    )
