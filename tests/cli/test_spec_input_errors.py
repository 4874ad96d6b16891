"""Inputs that are not a spec get exit 2 and a clear reason, in text and JSON."""

from __future__ import annotations

import json

import pytest

from speculative_infra.safe_files import MAX_SPEC_BYTES


def _check(run_cli, path, *extra):
    return run_cli("check", str(path), *extra)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("instance_type: x\n".encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
        (b"\x00\x01\x02\xfe binary", "not UTF-8 text (byte 0xfe at offset 3)"),
        (b"#" * (MAX_SPEC_BYTES + 1), "the spec is larger than 1 MiB; allowed: at most 1 MiB"),
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


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("g6.2xlarge", "ml.g6.2xlarge"),  # the ml. prefix left out
        ("ml.g6.2XLarge", "ml.g6.2xlarge"),  # upper case
        ("ML.G6E.12XLARGE", "ml.g6e.12xlarge"),
        (" ml.g6.2xlarge ", "ml.g6.2xlarge"),  # spaces around it
        ("g6 .2xlarge", "ml.g6.2xlarge"),
    ],
)
def test_a_malformed_instance_type_gets_the_name_it_probably_means(run_cli, tmp_path, given, suggested):
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"instance_type: {given!r}\ncontainer: {{framework: vllm}}\nmodel: {{id: Qwen/Qwen3-32B}}\n"
    )
    code, _, err = _check(run_cli, path)
    assert code == 2
    # The field, the value, what is allowed, and the suggestion; no regular expression.
    assert (
        f"instance_type: {given!r} is not a SageMaker instance type name; allowed: ml.<family>.<size> in lower "
        f"case, e.g. ml.g7e.2xlarge; did you mean {suggested!r}?"
    ) in err
    assert "pattern" not in err and "^ml" not in err
    code, out, _ = _check(run_cli, path, "--format", "json")
    [problem] = json.loads(out)["spec_errors"]
    assert problem["field"] == "instance_type" and f"did you mean {suggested!r}?" in problem["reason"]


@pytest.mark.parametrize("given", ["ml.g6", "g6", "ml.g6.2xlarge.x", "ml_g6_2xlarge", "ml.g6.2x_large", ""])
def test_no_suggestion_where_no_repair_gives_an_instance_type_name(run_cli, tmp_path, given):
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"instance_type: {given!r}\ncontainer: {{framework: vllm}}\nmodel: {{id: Qwen/Qwen3-32B}}\n"
    )
    code, _, err = _check(run_cli, path)
    assert code == 2
    assert (
        f"instance_type: {given!r} is not a SageMaker instance type name; allowed: ml.<family>.<size>" in err
    )
    assert "did you mean" not in err


def test_a_well_formed_instance_type_passes_the_spec_and_is_the_catalogs_to_judge(run_cli, tmp_path):
    # Well formed but unknown: not a spec error (exit 2) but SI100's finding (exit 1).
    path = tmp_path / "spec.yaml"
    path.write_text(
        "instance_type: ml.g6.3xlarge\ncontainer: {framework: vllm}\nmodel: {id: Qwen/Qwen3-32B}\n"
    )
    code, out, _ = _check(run_cli, path)
    assert code == 1 and "SI100" in out


def test_construct_props_get_the_same_suggestion():
    # The constructs build their spec with parse_spec (source: the construct's path).
    from speculative_infra.spec import SpecError, parse_spec

    props = {
        "instance_type": "g7e.2xlarge",
        "container": {"framework": "vllm"},
        "model": {"id": "Qwen/Qwen3-32B"},
    }
    with pytest.raises(SpecError) as err:
        parse_spec(props, source="Llm/Qwen3")
    assert err.value.problems == [
        (
            "instance_type",
            "'g7e.2xlarge' is not a SageMaker instance type name; allowed: ml.<family>.<size> in lower case, "
            "e.g. ml.g7e.2xlarge; did you mean 'ml.g7e.2xlarge'?",
        )
    ]
    assert "Llm/Qwen3: instance_type: 'g7e.2xlarge'" in str(err.value)
