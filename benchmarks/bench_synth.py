"""What do the constructs cost at synth time? The reference app against the same templates as raw L1.

Runs `python app.py` (3 stacks, 5 endpoints, 2 custom resources: every check, the catalog, jsii) and a
baseline process that synthesizes the app's own templates through `cloudformation_include.CfnInclude`
(the same resources, no library code), alternating, each in a fresh process, and prints the median wall
time of each and their ratio. Target: <= 1.15x.

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
BASELINE = """
import json, sys
from pathlib import Path
import aws_cdk as cdk
from aws_cdk import cloudformation_include as cfn_inc

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
app.synth()
"""


def _run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference"
        app_env = {**env, "CDK_OUTDIR": str(reference)}
        _run([sys.executable, "app.py"], app_env)  # the templates the baseline includes (and a warm-up)
        script = Path(tmp) / "baseline.py"
        script.write_text(BASELINE)
        library, raw = [], []
        for i in range(args.runs):
            library.append(
                _run([sys.executable, "app.py"], {**env, "CDK_OUTDIR": str(Path(tmp) / f"app{i}")})
            )
            raw.append(_run([sys.executable, str(script), str(reference), str(Path(tmp) / f"raw{i}")], env))
    lib_median, raw_median = statistics.median(library), statistics.median(raw)
    ratios = [a / b for a, b in zip(library, raw, strict=True)]
    result = {
        "runs": args.runs,
        "app_py_median_s": round(lib_median, 3),
        "raw_l1_median_s": round(raw_median, 3),
        "ratio_of_medians": round(lib_median / raw_median, 3),
        "median_paired_ratio": round(statistics.median(ratios), 3),
        "target": 1.15,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
