"""What do the constructs cost at synth time? The reference app against the same templates as raw L1.

Runs `python app.py` (3 stacks, 5 endpoints, 2 custom resources: every check, the catalog, jsii) and a
baseline process that synthesizes the app's own templates through `cloudformation_include.CfnInclude`
(the same resources, no library code), alternating, each in a fresh process, and prints the median wall
time of each and their ratio. Target: <= 1.15x.

Each process also times its own phases (importing the CDK; importing the library; building the
constructs; `app.synth()`), so the gap can be attributed: the library's imports include the CDK modules
its L2 constructs need (Lambda, Logs, Step Functions, custom resources, S3), which the baseline never
imports.

A third process, the L2 floor, is the baseline plus only what using the CDK's L2 constructs costs (their
modules, and the first of each kind the reference app uses, in a throwaway app): the time below which no
app built from those constructs can go, whatever the library does. `l2_floor_ratio` is that floor against
raw L1; `app_over_l2_floor` is what the library itself adds.

    .venv/bin/python benchmarks/bench_synth.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Both processes print their phase times as one JSON line on stderr.
APP = """
import json, runpy, sys, time
from jsii._kernel.providers import process as jsii_process

# Attribution only: count the jsii round trips and the time spent waiting on the CDK's JavaScript.
waited = {"seconds": 0.0, "calls": 0}
_send = jsii_process._NodeProcess.send


def timed_send(self, request, response_type):
    started = time.perf_counter()
    try:
        return _send(self, request, response_type)
    finally:
        waited["seconds"] += time.perf_counter() - started
        waited["calls"] += 1


jsii_process._NodeProcess.send = timed_send
marks = {}
counted = {"seconds": 0.0, "calls": 0}  # the totals at the previous mark


def mark(phase, since):
    now = time.perf_counter()
    marks[phase] = now - since
    marks[phase + "_jsii_calls"] = waited["calls"] - counted["calls"]
    marks[phase + "_js"] = waited["seconds"] - counted["seconds"]
    counted.update(waited)
    return now


start = time.perf_counter()
import aws_cdk as cdk
cdk_imported = mark("import_cdk", start)
import speculative_infra.constructs.vllm_endpoint, speculative_infra.constructs.lmi_component
library_imported = mark("import_library", cdk_imported)
app_module = runpy.run_path("app.py", run_name="bench")
app = app_module["build_app"](sys.argv[1])
built = mark("build", library_imported)
app.synth()
mark("synth", built)
print(json.dumps(marks), file=sys.stderr)
"""
BASELINE = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
import aws_cdk as cdk
from aws_cdk import cloudformation_include as cfn_inc
cdk_imported = time.perf_counter()
{l2_first_use}
source = Path(sys.argv[1])
app = cdk.App(outdir=sys.argv[2])
manifest = json.loads((source / "manifest.json").read_text())
for name, artifact in manifest["artifacts"].items():
    if artifact.get("type") != "aws:cloudformation:stack":
        continue
    region = artifact["environment"].rsplit("/", 1)[-1]
    env = None if region == "unknown-region" else cdk.Environment(region=region)
    stack = cdk.Stack(app, name, env=env, synthesizer=cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=False))
    cfn_inc.CfnInclude(stack, "Template", template_file=str(source / artifact["properties"]["templateFile"]))
built = time.perf_counter()
app.synth()
done = time.perf_counter()
print(json.dumps({"import_cdk": cdk_imported - start, "import_library": 0.0, "build": built - cdk_imported,
                  "synth": done - built}), file=sys.stderr)
"""
# The floor for any app built from the L2 constructs these templates come from: the baseline plus what
# using them costs before any of this library's code runs (importing the CDK modules they live in, and the
# first of each kind, which loads its JavaScript and stages the Provider framework's assets), in a
# throwaway app that is never synthesized. The L2s listed are the ones the reference app's constructs use.
L2_FIRST_USE = """
from aws_cdk import aws_applicationautoscaling as appscaling, aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions, aws_iam as iam, aws_lambda as lambda_
from aws_cdk import aws_logs as logs, aws_sns as sns, custom_resources as cr
throwaway = cdk.Stack(cdk.App(outdir=sys.argv[2] + "-throwaway"), "L2FirstUse")
iam.Role(throwaway, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
handler = lambda_.Function(throwaway, "Function", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
                           code=lambda_.Code.from_asset(sys.argv[3]),
                           log_group=logs.LogGroup(throwaway, "Logs"))
provider = cr.Provider(throwaway, "Provider", on_event_handler=handler, is_complete_handler=handler)
cdk.CustomResource(throwaway, "Resource", service_token=provider.service_token, resource_type="Custom::Floor")
metric = cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocations")
alarm = metric.create_alarm(throwaway, "Alarm", threshold=1, evaluation_periods=1)
alarm.add_alarm_action(cw_actions.SnsAction(sns.Topic(throwaway, "Topic")))
cloudwatch.Dashboard(throwaway, "Dashboard").add_widgets(cloudwatch.GraphWidget(left=[metric]))
appscaling.ScalableTarget(throwaway, "Scaling", service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
                          resource_id="endpoint/e/variant/v", scalable_dimension="sagemaker:variant:DesiredInstanceCount",
                          min_capacity=1, max_capacity=2).scale_to_track_metric(
    "Track", target_value=1, predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE)
"""
PHASES = ("import_cdk", "import_library", "build", "synth")
# Of each phase of the app: seconds waiting on the CDK's JavaScript, and the jsii round trips.
ATTRIBUTION = tuple(f"{p}_{k}" for p in PHASES for k in ("js", "jsii_calls"))


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Wall time of the whole process, and the phase times it reports."""
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - start
    phases = [line for line in done.stderr.decode().splitlines() if line.startswith('{"import_cdk"')]
    return wall, json.loads(phases[-1]) if phases else {}


def _median_phases(runs: list[dict[str, float]], keys: tuple[str, ...] = PHASES) -> dict[str, float]:
    return {k: round(statistics.median(r[k] for r in runs), 3) for k in keys if all(k in r for r in runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    # An installed wheel's modules are compiled at install time; let the warm-up run write the bytecode a
    # user's second synth would find, instead of compiling the library again in every timed run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference"
        app_env = {**env, "CDK_OUTDIR": str(reference)}
        _run([sys.executable, "app.py"], app_env)  # the templates the baseline includes (and a warm-up)
        script, app_script = Path(tmp) / "baseline.py", Path(tmp) / "app_phases.py"
        floor_script, handler = Path(tmp) / "l2_floor.py", Path(tmp) / "handler"
        script.write_text(BASELINE.replace("{l2_first_use}", ""))
        floor_script.write_text(BASELINE.replace("{l2_first_use}", L2_FIRST_USE))
        app_script.write_text(APP)
        handler.mkdir()
        (handler / "index.py").write_text("def handler(event, context):\n    return {}\n")
        library, raw, floor, library_phases, raw_phases = [], [], [], [], []
        for i in range(args.runs):
            wall, _ = _run([sys.executable, "app.py"], {**env, "CDK_OUTDIR": str(Path(tmp) / f"app{i}")})
            library.append(wall)
            wall, phases = _run(
                [sys.executable, str(script), str(reference), str(Path(tmp) / f"raw{i}")], env
            )
            raw.append(wall)
            raw_phases.append(phases)
            wall, _ = _run(
                [
                    sys.executable,
                    str(floor_script),
                    str(reference),
                    str(Path(tmp) / f"floor{i}"),
                    str(handler),
                ],
                env,
            )
            floor.append(wall)
            # Phases of the app come from a separate, instrumented run (the timed run is plain `python app.py`).
            _, phases = _run([sys.executable, str(app_script), str(Path(tmp) / f"phases{i}")], env)
            library_phases.append(phases)
    lib_median, raw_median, floor_median = (statistics.median(t) for t in (library, raw, floor))
    ratios = [a / b for a, b in zip(library, raw, strict=True)]
    result = {
        "runs": args.runs,
        "app_py_median_s": round(lib_median, 3),
        "raw_l1_median_s": round(raw_median, 3),
        "ratio_of_medians": round(lib_median / raw_median, 3),
        "median_paired_ratio": round(statistics.median(ratios), 3),
        "target": 1.15,
        # No app built from these L2 constructs can be faster than this, whatever the library does.
        "l2_floor_median_s": round(floor_median, 3),
        "l2_floor_ratio": round(floor_median / raw_median, 3),
        "app_over_l2_floor": round(lib_median / floor_median, 3),
        "phases_app_s": _median_phases(library_phases),
        "app_js_wait_s_and_jsii_calls": _median_phases(library_phases, ATTRIBUTION),
        "phases_raw_l1_s": _median_phases(raw_phases),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
