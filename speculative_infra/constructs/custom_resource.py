"""Lambda-backed custom resources: handler functions and a Provider with scoped roles and logs.

No AWS managed policies: every role gets an inline policy for its own log group only.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from speculative_infra.constructs.nag import acknowledge

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # speculative_infra/
LAMBDA_PACKAGE = "speculative_infra_lambda"  # the top-level lambda/ folder, as installed (setup.py)
LAMBDA_RUNTIME = lambda_.Runtime.PYTHON_3_14  # cdk-nag L1: the newest Python runtime


def _logging_role(
    scope: Construct, construct_id: str, log_group: logs.ILogGroup, description: str
) -> iam.Role:
    role = iam.Role(
        scope, construct_id, assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
        )
    )
    return role


def _log_group(scope: Construct, construct_id: str) -> logs.LogGroup:
    return logs.LogGroup(
        scope, construct_id, retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
    )


@cache
def handlers_dir() -> Path:
    """Where the installed distribution keeps the handler folders: found through the import system, so
    a wheel in someone else's app works the same as this checkout."""
    return Path(str(resources.files(LAMBDA_PACKAGE)))


def handler_code(package: str) -> lambda_.Code:
    """The handlers folder as an asset, with only the one handler package the function runs."""
    root = handlers_dir()
    others = [p.name for p in root.iterdir() if p.is_dir() and p.name not in (package, "__pycache__")]
    return lambda_.Code.from_asset(str(root), exclude=["**/__pycache__", "*.pyc", *others])


def stage_engine_handler(folder: str) -> str:
    """A folder holding one handler and the benchmark engine it imports (nothing else of the library),
    as a Lambda asset."""
    staging = Path(tempfile.mkdtemp(prefix=f"speculative-infra-{folder.replace('_', '-')}-"))
    # Synthesis copies the asset into the cloud assembly; the staging folder is not needed afterwards.
    atexit.register(shutil.rmtree, staging, ignore_errors=True)
    engine_root = PACKAGE_DIR / "benchmark"

    def ignore(folder: str, names: list[str]) -> set[str]:
        # benchmark/report.py needs matplotlib (not in Lambda); every other module, at any depth, goes.
        skipped = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
        if Path(folder).resolve() == engine_root.resolve():
            skipped.add("report.py")
        return skipped

    package = staging / "speculative_infra"
    package.mkdir()
    for name in ("__init__.py", "_version.py", "safe_files.py"):  # safe_files: the engine's bounded reads
        shutil.copy2(PACKAGE_DIR / name, package / name)
    shutil.copytree(PACKAGE_DIR / "benchmark", package / "benchmark", ignore=ignore)
    shutil.copytree(handlers_dir() / folder, staging / folder, ignore=ignore)
    _copy_sketch_library(staging)
    return str(staging)


def _copy_sketch_library(staging: Path) -> None:
    """ddsketch (the distributed load test's latency sketches) and six, its one dependency: both pure
    Python, copied from the installed distributions; ddsketch's protobuf codec stays out (no protobuf)."""
    import ddsketch
    import six

    shutil.copytree(
        Path(ddsketch.__file__).parent,
        staging / "ddsketch",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "pb"),
    )
    shutil.copy2(six.__file__, staging / "six.py")


def handler_function(
    scope: Construct,
    construct_id: str,
    *,
    handler: str,
    description: str,
    timeout: Duration | None = None,
    memory_size: int = 256,
    environment: Mapping[str, str] | None = None,
    code: lambda_.Code | None = None,
) -> lambda_.Function:
    """A Python handler (default code: its folder under lambda/), with its own log
    group and role."""
    log_group = _log_group(scope, f"{construct_id}Logs")
    role = _logging_role(scope, f"{construct_id}Role", log_group, f"speculative-infra {description}")
    return lambda_.Function(
        scope,
        construct_id,
        runtime=LAMBDA_RUNTIME,
        handler=handler,
        code=code or handler_code(handler.split(".", 1)[0]),
        timeout=timeout or Duration.minutes(1),
        memory_size=memory_size,
        description=f"speculative-infra {description}",
        environment=dict(environment or {}),
        role=role,
        log_group=log_group,
    )


def provider(
    scope: Construct,
    construct_id: str,
    *,
    on_event: lambda_.IFunction,
    is_complete: lambda_.IFunction | None,
    query_interval: Duration,
    total_timeout: Duration,
) -> cr.Provider:
    """custom_resources.Provider whose framework functions and waiter log to one scoped log group."""
    log_group = _log_group(scope, f"{construct_id}Logs")
    on_event_role = _logging_role(scope, f"{construct_id}OnEventRole", log_group, "custom resource framework")
    waiter_role = _logging_role(scope, f"{construct_id}WaiterRole", log_group, "custom resource framework")
    result = cr.Provider(
        scope,
        construct_id,
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=query_interval if is_complete else None,
        total_timeout=total_timeout if is_complete else None,
        log_group=log_group,
        framework_on_event_role=on_event_role,
        framework_complete_and_timeout_role=waiter_role if is_complete else None,
        disable_waiter_state_machine_logging=False if is_complete else None,
        waiter_state_machine_log_options=cr.LogOptions(destination=log_group, level=sfn.LogLevel.ALL)
        if is_complete
        else None,
    )
    reason = (
        "The custom-resource Provider framework (aws-cdk-lib) invokes the handler function by any version "
        "or alias (`<function arn>:*`); it names the function itself."
    )
    for fn in (on_event, is_complete):
        if fn is not None:
            for role in (on_event_role, waiter_role, result.node.try_find_child("waiter-state-machine")):
                if role is not None:
                    acknowledge(role, "IAM5", reason, resource=f"{fn.function_arn}:*")
    if is_complete is not None:
        machine = result.node.find_child("waiter-state-machine")
        for fn_id in ("framework-isComplete", "framework-onTimeout"):
            framework_fn = result.node.find_child(fn_id)
            assert isinstance(framework_fn, lambda_.Function)
            acknowledge(machine, "IAM5", reason, resource=f"{framework_fn.function_arn}:*")
        acknowledge(
            machine,
            "IAM5",
            "Step Functions' CloudWatch Logs delivery actions (logs:CreateLogDelivery, logs:PutResourcePolicy, "
            "...) accept no resource ARN; aws-cdk-lib adds them for the waiter's logging.",
            resource="*",
        )
        acknowledge(
            machine,
            "SF2",
            "The Provider framework's waiter state machine only loops over the is-complete handler; aws-cdk-lib "
            "offers no X-Ray option for it, and the handlers log every poll.",
        )
    return result
