"""`speculative-infra preflight SPEC_OR_APP`: read-only checks against your AWS account before `cdk deploy`.

Exit codes: 0 nothing blocks the deployment, 1 errors found, 2 the spec cannot be read or there are no
AWS credentials/region.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from speculative_infra.cli.tables import render_table
from speculative_infra.facts.hub_reader import DEFAULT_ENDPOINT
from speculative_infra.preflight import AwsClients, PreflightInputs, run_preflight
from speculative_infra.preflight.targets import AssemblyError, Target, assembly_targets, spec_target
from speculative_infra.rules import Finding, Severity
from speculative_infra.s3_uri import parse_s3_uri
from speculative_infra.spec import SpecError, load_spec
from speculative_infra.spec.models import REGION_PATTERN

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE = 0, 1, 2


def add_preflight_command(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "preflight",
        help="check your AWS account (quotas, role, S3 data, Hub access) before cdk deploy",
        description="Read-only calls with your AWS credentials: the SageMaker quota '<instance type> for "
        "endpoint usage' against the instances the spec (or every stack of a synthesized app, region by "
        "region) needs at maximum capacity (and whether the type is "
        "offered for hosting in the region), the execution role (--role-arn), S3 data (--s3-uri), and the "
        "model's availability on the Hugging Face Hub (token from HF_TOKEN).",
        epilog="exit status: 0 nothing blocks the deployment; 1 errors found; 2 the spec cannot be read, or no "
        "AWS credentials or region.\ndocs: docs/deploying.md (quotas, troubleshooting).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "spec_or_app",
        metavar="SPEC_OR_APP",
        help="a deployment spec (YAML), or a synthesized app's cdk.out folder",
    )
    parser.add_argument("--region", type=_region, help="AWS region (default: the spec's, else the profile's)")
    parser.add_argument("--profile", help="AWS profile (default: the environment's credentials)")
    parser.add_argument(
        "--role-arn", type=_role_arn, help="the execution role you pass as role= (default: none, created)"
    )
    parser.add_argument(
        "--s3-uri",
        action="append",
        type=_s3_uri,
        default=[],
        help="S3 data the deployment reads (weights); repeatable",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run_preflight_command)


# IAM role ARNs: a partition, a 12-digit account, a path and a name of IAM's characters (IAM User Guide,
# "IAM identifiers"; a role name is at most 64 characters, a path at most 512).
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/(?:[\w+=,.@-]+/){0,32}[\w+=,.@-]{1,64}")


def _region(text: str) -> str:
    if not re.fullmatch(REGION_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not an AWS region name; allowed: e.g. us-east-1")
    return text


def _role_arn(text: str) -> str:
    if len(text) > 2048 or not _ROLE_ARN.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not an IAM role ARN; allowed: arn:aws:iam::<12-digit account>:role/<name>"
        )
    return text


def _s3_uri(text: str) -> str:
    try:
        parse_s3_uri(text, "--s3-uri")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--s3-uri: ")) from None
    return text


def aws_clients(profile: str | None, region: str) -> AwsClients:
    """Clients of the user's session; replaced by stubbed clients in tests."""
    import boto3

    session = boto3.Session(profile_name=profile, region_name=region)
    if session.get_credentials() is None:
        raise LookupError("no AWS credentials found (aws configure, AWS_PROFILE or --profile)")
    return AwsClients(
        service_quotas=session.client("service-quotas"), iam=session.client("iam"), s3=session.client("s3")
    )


def _targets(args: argparse.Namespace) -> list[Target]:
    """The spec's deployment, or every stack of a synthesized app (cdk.out), grouped by region."""
    path = Path(args.spec_or_app)
    if path.is_dir():
        return assembly_targets(path, default_region=args.region)
    spec = load_spec(path)
    region = (
        args.region or spec.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    )
    return [spec_target(spec, region, str(path))] if region else [Target(region=None, sources=[str(path)])]


def run_preflight_command(args: argparse.Namespace) -> int:
    try:
        targets = _targets(args)
    except (SpecError, AssemblyError) as err:
        print(str(err), file=sys.stderr)
        return EXIT_UNUSABLE
    regionless = [source for t in targets if t.region is None for source in t.sources]
    if regionless:
        print(
            f"speculative-infra preflight: no region for {', '.join(regionless)} (set the spec's or stack's "
            "region, --region or AWS_REGION)",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    findings: list[Finding] = []
    for target in targets:
        assert target.region is not None
        try:
            clients = aws_clients(args.profile, target.region)
        except Exception as err:
            print(f"speculative-infra preflight: {err}", file=sys.stderr)
            return EXIT_UNUSABLE
        inputs = PreflightInputs(
            target=target,
            region=target.region,
            role_arn=args.role_arn,
            s3_uris=list(args.s3_uri),
            hf_endpoint=os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT),
            hf_token=os.environ.get("HF_TOKEN") or None,
        )
        findings += run_preflight(clients, inputs)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    regions = sorted({t.region for t in targets if t.region})
    if args.format == "json":
        report = {"ok": not errors, "regions": regions, "findings": [f.as_dict() for f in findings]}
        print(json.dumps(report, indent=2))
    else:
        if findings:
            rows = [(f.code, f.severity.value, f.message, f.fix) for f in findings]
            print(render_table(["code", "severity", "message", "fix"], rows, max_width=56))
        verdict = "READY" if not errors else "NOT READY"
        print(
            f"{verdict} in {', '.join(regions)}: {len(errors)} error(s), {len(findings) - len(errors)} warning(s)"
        )
    return EXIT_FINDINGS if errors else EXIT_OK
