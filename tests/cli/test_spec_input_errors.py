"""Inputs that are not a spec get exit 2 and a clear reason, in text and JSON."""

from __future__ import annotations

import json

import pytest

from speculative_infra.spec.loader import MAX_SPEC_BYTES


def _check(run_cli, path, *extra):
    return run_cli("check", str(path), *extra)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("instance_type: x\n".encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
        (b"\x00\x01\x02\xfe binary", "not UTF-8 text (byte 0xfe at offset 3)"),
        (b"#" * (MAX_SPEC_BYTES + 1), f"the file is {MAX_SPEC_BYTES + 1} bytes; allowed: a spec of at most"),
    ],
)
def test_unreadable_specs_exit_2(run_cli, tmp_path, content, reason):
    path = tmp_path / "spec.yaml"
    path.write_bytes(content)
    code, _, err = _check(run_cli, path)
    assert code == 2 and reason in err and "Traceback" not in err
    code, out, _ = _check(run_cli, path, "--format", "json")
    assert code == 2 and reason in json.loads(out)["spec_errors"][0]["reason"]


def test_a_spec_of_exactly_the_limit_is_read(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"#" * MAX_SPEC_BYTES)
    code, _, err = _check(run_cli, path)
    assert code == 2 and "the file is empty" in err  # read, and found to hold nothing


def test_hints_for_unquoted_versions_and_misspelt_fields(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        "instance_type: ml.g7e.2xlarge\n"
        "container: {framework: vllm, version: 0.16}\n"
        "model: {id: Qwen/Qwen3-32B, paramters_billion: 3}\n"
        "scaling: {max_capacity: 2, target_valu: 3}\n"
        "inferance_ami_version: auto\n"
    )
    code, _, err = _check(run_cli, path)
    assert code == 2
    assert "container.version: Input should be a valid string (got 0.16); quote it in YAML" in err
    assert "model.paramters_billion: unknown field; did you mean 'parameters_billion'?" in err
    assert "scaling.target_valu: unknown field; did you mean 'target_value'?" in err
    assert "inferance_ami_version: unknown field; did you mean 'inference_ami_version'?" in err


@pytest.mark.parametrize(("command", "doc"), [("check", "docs/spec.md"), ("bench", "docs/benchmarking.md")])
def test_help_states_exit_codes_and_docs(run_cli, command, doc):
    code, out, _ = run_cli(command, "--help")
    assert code == 0 and "exit status: 0" in out and doc in out
