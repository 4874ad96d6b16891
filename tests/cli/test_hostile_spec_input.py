"""Hostile and careless specs and context files: exit 2 with a message that names the problem, never a
traceback or a hang (issue 33). Each class of input has its own cases; the fuzz tests at the end
generate more of them."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from speculative_infra.check import check
from speculative_infra.safe_files import MAX_CONTEXT_BYTES, MAX_SPEC_BYTES
from speculative_infra.spec import SpecError, load_spec, parse_spec
from speculative_infra.spec.models import API_INT_MAX
from tests.conftest import REFERENCE_SPEC, deep_merge

HANG_GUARD_S = 20  # not a speed target (benchmarks/ has those): a test that blocks fails instead of hanging


def _finishes(function: Any, *args: Any) -> Any:
    """Run `function` in a thread; fail (not hang) if it blocks."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as err:
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), f"{function.__name__}{args} blocked for {HANG_GUARD_S} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _reference_yaml(**changes: Any) -> str:
    return yaml.safe_dump(deep_merge(REFERENCE_SPEC, changes), sort_keys=False)


def _refused(run_cli: Any, path: Path, *reasons: str) -> str:
    code, out, err = _finishes(run_cli, "check", str(path))
    assert code == 2, (code, out, err)
    assert "Traceback" not in err + out
    for reason in reasons:
        assert reason in err, err
    return err


# Files that are not a regular file are refused before they are opened (a FIFO would block the read).
def test_a_fifo_as_the_spec_is_refused_without_blocking(run_cli, tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    _refused(run_cli, fifo, "is a FIFO (named pipe); expected the spec as a regular file")


@pytest.mark.parametrize(
    ("path", "kind"), [("/dev/zero", "a device"), ("/dev/null", "a device"), ("/", "a directory")]
)
def test_devices_and_directories_as_the_spec_are_refused(run_cli, path, kind):
    _refused(run_cli, Path(path), f"is {kind}; expected the spec as a regular file")


def test_a_symlink_to_a_device_is_judged_by_what_it_points_to(run_cli, tmp_path):
    link = tmp_path / "spec.yaml"
    link.symlink_to("/dev/zero")
    _refused(run_cli, link, "is a device")


def test_a_sparse_file_of_gigabytes_is_refused_after_reading_one_byte_past_the_limit(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    with path.open("wb") as handle:
        handle.truncate(8 * 2**30)  # 8 GiB that occupy no disk
    _refused(run_cli, path, "the spec is larger than 1 MiB; allowed: at most 1 MiB")


def test_the_size_limit_is_on_bytes_read_not_on_what_stat_reports(tmp_path):
    from speculative_infra.safe_files import InputFileError, read_bytes

    path = tmp_path / "f"
    path.write_bytes(b"x" * 11)
    assert read_bytes(path, max_bytes=11) == b"x" * 11  # boundary: exactly the limit is read
    with pytest.raises(InputFileError, match="larger than 10 bytes"):
        read_bytes(path, max_bytes=10)
    # /proc files are regular files whose st_size is 0 whatever they hold: only the bounded read sees it.
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    with pytest.raises(InputFileError, match="larger than 16 bytes"):
        read_bytes(status, max_bytes=16)


def _bomb(levels: int, under: str | None = None) -> str:
    """A 'billion laughs' spec: each anchor repeats the previous one ten times."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    body = "\n".join("  " + line for line in lines) if under else "\n".join(lines)
    head = f"{under}:\n" if under else ""
    data = deep_merge(REFERENCE_SPEC, {})
    data.pop(under or "", None)  # the bomb takes the section's place (a key given twice is refused)
    return yaml.safe_dump(data, sort_keys=False) + head + body + "\n"


@pytest.mark.parametrize("under", [None, "engine", "speculative", "environment"])
def test_an_alias_bomb_is_refused_before_it_is_built(run_cli, tmp_path, under):
    text = _bomb(9, under)
    assert len(text) < 2048  # a small file...
    # ... whose aliases would expand to 10^9 values
    _refused(run_cli, _spec_file(tmp_path, text), "aliases expand the document past 100,000 values")


def test_aliases_a_spec_uses_for_sharing_are_read(tmp_path):
    text = (
        "instance_type: ml.g7e.2xlarge\ncontainer: {framework: vllm}\nmodel: {id: Qwen/Qwen3-32B}\n"
        "engine: &shared {max_model_len: 4096, max_num_seqs: 64}\n"
        "scaling: {max_capacity: 2, target_value: 48}\n"
        "environment: {VLLM_LOGGING_LEVEL: &level INFO, VLLM_OTHER: *level}\n"
    )
    spec = load_spec(_spec_file(tmp_path, text))
    assert spec.engine.max_model_len == 4096 and spec.environment["VLLM_OTHER"] == "INFO"


def test_a_recursive_alias_is_refused(run_cli, tmp_path):
    text = _reference_yaml() + "environment: &loop {A: *loop}\n"
    _refused(run_cli, _spec_file(tmp_path, text), "an alias refers to a node that contains it")


@pytest.mark.parametrize(
    "text",
    [
        "engine: " + "[" * 100_000,  # flow
        "engine:\n" + "".join(" " * i + "a:\n" for i in range(1, 200)),  # block
        "engine:\n  " + "- " * 500 + "x",
    ],
)
def test_deep_nesting_is_refused_at_the_limit(run_cli, tmp_path, text):
    _refused(run_cli, _spec_file(tmp_path, text), "nested more than 64 levels deep")


def test_aliases_cannot_hide_depth_behind_a_shallow_reference(run_cli, tmp_path):
    # Each anchor is 40 levels deep around the previous one. Measured where first met (a0 first, from
    # the shallow list at the end), the walk once counted each anchor's own 40 levels only and let a
    # document 120 levels deep through.
    lines = ["a0: &a0 " + "[" * 40 + "{}" + "]" * 40]
    lines += [f"a{i}: &a{i} " + "[" * 40 + f"*a{i - 1}" + "]" * 40 for i in range(1, 3)]
    deep = "\n".join("  " + line for line in lines)
    text = _reference_yaml() + "x_deep:\n" + deep + "\nx_shallow: [*a2, *a1, *a0]\n"
    _refused(run_cli, _spec_file(tmp_path, text), "nested more than 64 levels deep")


@pytest.mark.parametrize(("lists", "refused"), [(62, False), (63, True)])
def test_the_nesting_limit_counts_containers_as_json_does(lists, refused):
    from speculative_infra.safe_files import parse_json
    from speculative_infra.spec.bounded_yaml import BoundedYamlError, load_bounded_yaml

    # The document, engine's mapping and the lists: 64 containers in all is the limit, in YAML and JSON.
    yaml_text = "engine: {x: " + "[" * lists + "1" + "]" * lists + "}"
    json_text = '{"engine": {"x": ' + "[" * lists + "1" + "]" * lists + "}}"
    if refused:
        with pytest.raises(BoundedYamlError, match="nested more than 64"):
            load_bounded_yaml(yaml_text)
        with pytest.raises(ValueError, match="nested more than 64"):
            parse_json(json_text, source="t")
    else:
        assert load_bounded_yaml(yaml_text) == parse_json(json_text, source="t")


@pytest.mark.parametrize(("digits", "refused"), [(64, False), (65, True)])
def test_the_integer_length_limit_is_64_digits_in_yaml_and_json(digits, refused):
    from speculative_infra.safe_files import InputFileError, parse_json
    from speculative_infra.spec.bounded_yaml import BoundedYamlError, load_bounded_yaml

    number = "9" * digits
    if refused:
        with pytest.raises(BoundedYamlError, match="at most 64 digits"):
            load_bounded_yaml(f"x: {number}")
        with pytest.raises(InputFileError, match="at most 64 digits"):
            parse_json(f'{{"x": {number}}}', source="t")
    else:
        assert (
            load_bounded_yaml(f"x: {number}")
            == parse_json(f'{{"x": {number}}}', source="t")
            == {"x": int(number)}
        )


@pytest.mark.parametrize(("items", "refused"), [(99_996, False), (99_997, True)])
def test_the_expansion_limit_is_exact(items, refused):
    from speculative_infra.spec.bounded_yaml import BoundedYamlError, measure

    # a: &l [x, x, ...] (items + 1 nodes), then b: *l, in a mapping: 1 + 2 keys + 2 x (items + 1) nodes.
    half = items // 2
    text = "a: &l [" + ", ".join(["x"] * half) + "]\nb: *l\n"
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    size = 1 + 2 + 2 * (half + 1)
    if refused and size > 100_000:
        with pytest.raises(BoundedYamlError, match="past 100,000 values"):
            measure(node)
    elif size <= 100_000:
        assert measure(node) == size


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("engine: {max_model_len: 2001-02-30}", "'2001-02-30' cannot be read as timestamp"),
        ("engine: {max_model_len: !!timestamp foo}", "'foo' cannot be read as timestamp"),
        ("engine: {max_model_len: !!int abc}", "'abc' cannot be read as int"),
        ("engine: {gpu_memory_utilization: !!float abc}", "'abc' cannot be read as float"),
        ("engine: {max_num_seqs: 64}\nengine: {max_num_seqs: 8}", "'engine' is given twice in one mapping"),
    ],
)
def test_values_yaml_cannot_build_and_keys_given_twice_are_spec_errors(run_cli, tmp_path, text, reason):
    err = _refused(run_cli, _spec_file(tmp_path, text + "\n"), reason)
    assert "line " in err


def test_nesting_up_to_the_limit_is_read_and_judged_by_the_schema(run_cli, tmp_path):
    # 64 levels in all: the document, engine's mapping and 62 lists.
    text = "engine: {x: " + "[" * 62 + "]" * 62 + "}\n"
    err = _refused(run_cli, _spec_file(tmp_path, text), "instance_type: Field required")
    assert "64 levels" not in err  # read as YAML; the schema then judges it


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1" * 5000, "an integer of 5000 digits; allowed: at most 64 digits"),
        (".nan", ".nan is not a finite number; NaN and infinity are refused"),
        ("-.inf", "-.inf is not a finite number"),
        ("1.0e+999", "1.0e+999 is not a finite number"),
    ],
)
@pytest.mark.parametrize("field", ["instance_count", "engine.gpu_memory_utilization", "engine.some_flag"])
def test_numbers_that_are_not_numbers_are_refused_with_their_line(run_cli, tmp_path, value, reason, field):
    section, _, key = field.rpartition(".")
    data = deep_merge(REFERENCE_SPEC, {})
    data.pop(section or key, None)  # the field is written by hand below, as the value's own YAML
    text = yaml.safe_dump(data, sort_keys=False)
    text += f"{section}:\n  {key}: {value}\n" if section else f"{key}: {value}\n"
    err = _refused(run_cli, _spec_file(tmp_path, text), reason)
    assert "line " in err


def test_an_integer_of_64_digits_is_read_and_then_judged_by_its_range(run_cli, tmp_path):
    text = _reference_yaml() + "instance_count: " + "9" * 64 + "\n"
    _refused(run_cli, _spec_file(tmp_path, text), f"less than or equal to {API_INT_MAX}")


# Ranges of the numbers a spec (or a construct's props) holds.
@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"instance_count": 10**30}, "instance_count", f"less than or equal to {API_INT_MAX}"),
        ({"instance_count": 1e30}, "instance_count", "(got 1e+30)"),
        ({"instance_count": API_INT_MAX + 1}, "instance_count", "a 32-bit integer"),
        ({"instance_count": 0}, "instance_count", "greater than or equal to 1"),
        ({"volume_size_in_gb": 513}, "volume_size_in_gb", "less than or equal to 512"),
        ({"engine": {"max_num_seqs": 2**31}}, "engine.max_num_seqs", "less than or equal to 2147483647"),
        ({"engine": {"max_model_len": 2**40}}, "engine.max_model_len", "less than or equal to 2147483647"),
        ({"engine": {"gpu_memory_utilization": float("nan")}}, "engine.gpu_memory_utilization", "finite"),
        ({"engine": {"some_flag": float("inf")}}, "engine", "some_flag: inf is not a finite number"),
        (
            {"engine": {"some_flag": [[{"x": float("nan")}]]}},
            "engine",
            "some_flag: nan is not a finite number",
        ),
        ({"engine": {"some_flag": 2**70}}, "engine", "allowed: within a 64-bit integer"),
        (
            {"speculative": {"num_speculative_tokens": 2**31}},
            "speculative.num_speculative_tokens",
            "2147483647",
        ),
        ({"speculative": {"acceptance": float("nan")}}, "speculative", "acceptance: nan is not a finite"),
        ({"scaling": {"max_capacity": 2**31}}, "scaling.max_capacity", "less than or equal to 2147483647"),
        ({"scaling": {"max_capacity": 2, "target_value": float("nan")}}, "scaling.target_value", "finite"),
        ({"scaling": {"max_capacity": 2, "target_value": 1e300 * 1e300}}, "scaling.target_value", "finite"),
        ({"scaling": {"max_capacity": 2, "target_value": 2.0**361}}, "scaling.target_value", "less than"),
        (
            {"scaling": {"max_capacity": 2, "scale_in_cooldown_seconds": 2**31}},
            "scaling.scale_in_cooldown_seconds",
            "less than or equal to 2147483647",
        ),
        (
            {"model": {"parameters_billion": 1e6}},
            "model",
            "parameters_billion is 1000000.0; allowed: 1e-06 to 100000",
        ),
        ({"model": {"parameters_billion": 1e-7}}, "model", "parameters_billion is 1e-07; allowed: 1e-06"),
        (
            {"model": {"parameters_billion": 30, "weights_gb": 1e-3}},
            "model",
            "weights_gb 0.001 for 30 billion parameters; allowed: 0.1 to 8 GB per billion",
        ),
        ({"model": {"weights_gb": float("inf")}}, "model.weights_gb", "finite"),
        (
            {"model": {"num_hidden_layers": 10_001}},
            "model",
            "num_hidden_layers is 10001; allowed: 1 to 10000",
        ),
        ({"model": {"head_dim": 16_385}}, "model", "head_dim is 16385; allowed: 1 to 16384"),
        (
            {"model": {"num_attention_heads": 64, "num_key_value_heads": 7}},
            "model",
            "num_key_value_heads 7 does not divide num_attention_heads 64",
        ),
        (
            {"model": {"num_hidden_layers": 4, "sliding_window_layers": 5}},
            "model",
            "sliding_window_layers 5 is more than num_hidden_layers 4",
        ),
        (
            {"model": {"quantization": "fp8", "sparsity": "2:4"}},
            "model",
            "sparsity '2:4' is given for quantization 'fp8'; allowed: only with quantization 'compressed-tensors'",
        ),
        (
            {"model": {"quantization": "awq", "quantization_scheme": "w8a8_fp8"}},
            "model",
            "quantization_scheme 'w8a8_fp8' is given for quantization 'awq'",
        ),
        ({"model": {"id": "../../etc/passwd"}}, "model.id", "'../../etc/passwd' has 3 '/'"),
        ({"model": {"id": "Qwen/Qwen3 32B"}}, "model.id", "is not a Hugging Face repository id"),
        ({"model": {"id": "Qwen/..hidden"}}, "model.id", "hold no '--' or '..'"),
        ({"model": {"id": "Qwen/" + "x" * 97}}, "model.id", "each part 1 to 96 letters"),
    ],
)
def test_absurd_numbers_and_contradictory_facts_are_spec_errors(changes, field, reason):
    with pytest.raises(SpecError) as raised:
        parse_spec(deep_merge(REFERENCE_SPEC, changes))
    fields = {path: why for path, why in raised.value.problems}
    assert field in fields, raised.value.problems
    assert reason in fields[field]


@pytest.mark.parametrize(
    "changes",
    [
        {"instance_count": API_INT_MAX},
        {"volume_size_in_gb": 512},
        {"engine": {"max_num_seqs": API_INT_MAX}},
        {"scaling": {"max_capacity": API_INT_MAX, "target_value": 2.0**359}},
        {"model": {"id": "Qwen/" + "x" * 96}},
        {"model": {"id": "gpt2"}},  # a repository without an owner (the Hub's oldest ids)
        {"engine": {"some_flag": 2**63 - 1}},
    ],
)
def test_the_largest_values_allowed_are_read(changes):
    parse_spec(deep_merge(REFERENCE_SPEC, changes))  # boundaries: these parse (the rules judge them)


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        ({"name": "night", "schedule": "cron(0 20 * * ? *)"}, "sets neither min_capacity nor max_capacity"),
        (
            {
                "name": "night",
                "schedule": "cron(0 20 * * ? *)",
                "min_capacity": 1,
                "time_zone": "Mars/Olympus",
            },
            "'Mars/Olympus' is not a time zone of the IANA database",
        ),
        (
            {"name": "night", "schedule": "cron(0 20 * * ? *)", "min_capacity": 1, "time_zone": "CEST"},
            "'CEST' is not a time zone of the IANA database",
        ),
        (
            {"name": "night", "schedule": "cron(0 20 * * ? *)", "min_capacity": -1},
            "greater than or equal to 0",
        ),
        ({"name": "n" * 257, "schedule": "cron(0 20 * * ? *)", "min_capacity": 1}, "at most 256 characters"),
    ],
)
def test_schedules_need_a_capacity_and_a_real_time_zone(schedule, reason):
    with pytest.raises(SpecError) as raised:
        parse_spec(deep_merge(REFERENCE_SPEC, {"scaling": {"max_capacity": 2, "schedules": [schedule]}}))
    assert any(reason in why for _, why in raised.value.problems), raised.value.problems


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+9"])
def test_iana_time_zones_are_accepted(zone):
    schedule = {"name": "night", "schedule": "cron(0 20 * * ? *)", "max_capacity": 1, "time_zone": zone}
    parse_spec(deep_merge(REFERENCE_SPEC, {"scaling": {"max_capacity": 2, "schedules": [schedule]}}))


def test_a_catalog_model_overridden_into_a_contradiction_is_refused_by_a_rule():
    # The spec alone is consistent (it gives KV heads only); merged with the catalog's 64 heads it is not.
    result = check(parse_spec(deep_merge(REFERENCE_SPEC, {"model": {"num_key_value_heads": 7}})))
    [finding] = [f for f in result.errors if f.code == "SI331"]
    assert finding.field == "model.num_key_value_heads"
    assert "overridden in the spec" in finding.message


def test_every_catalog_model_is_consistent():
    from speculative_infra.catalog import load_catalog
    from speculative_infra.model_consistency import model_facts_problems

    models = load_catalog().models
    assert models
    for model_id, facts in models.items():
        assert model_facts_problems(facts.model_dump(exclude_none=True)) == [], model_id


@pytest.mark.parametrize(
    ("facts", "field"),
    [
        ({"num_attention_heads": 8, "num_key_value_heads": 16}, "num_key_value_heads"),  # more KV than heads
        ({"num_attention_heads": 12, "num_key_value_heads": 8}, "num_key_value_heads"),  # does not divide
        ({"num_hidden_layers": 4, "sliding_window_layers": 5}, "sliding_window_layers"),
        ({"parameters_billion": 20, "active_parameters_billion": 21}, "active_parameters_billion"),
        ({"parameters_billion": 20, "quantized_parameters_billion": 20.5}, "quantized_parameters_billion"),
        ({"num_experts": 8, "experts_per_token": 9}, "experts_per_token"),
    ],
)
def test_each_relation_between_model_facts_has_its_boundary(facts, field):
    from speculative_infra.model_consistency import model_facts_problems

    assert [f for f, _ in model_facts_problems(facts)] == [field]
    # One step back over the boundary is consistent.
    fixed = dict(facts)
    fixed[field] = {
        "num_key_value_heads": 4,
        "sliding_window_layers": 4,
        "active_parameters_billion": 20,
        "quantized_parameters_billion": 20,
        "experts_per_token": 8,
    }[field]
    assert model_facts_problems(fixed) == []


# Environment entries that would replace what the spec sets and the rules checked.
@pytest.mark.parametrize(
    ("environment", "field"),
    [
        ({"SM_VLLM_MAX_NUM_SEQS": "100000"}, "engine.max_num_seqs"),
        ({"SM_VLLM_MODEL": "evil/model"}, "model.id"),
        ({"HF_MODEL_ID": "evil/model"}, "model.id"),
        ({"SM_VLLM_SPECULATIVE_CONFIG": "{}"}, "speculative"),
    ],
)
def test_environment_cannot_override_checked_settings(run_cli, tmp_path, environment, field):
    path = _spec_file(tmp_path, _reference_yaml(environment=environment))
    code, out, _ = run_cli("check", str(path), "--format", "json")
    [finding] = [f for f in json.loads(out)["findings"] if f["code"] == "SI511"]
    assert code == 1 and finding["fix"].endswith(
        f"set {field}" + (" (model_data in the constructs for S3 weights)" if field == "model.id" else "")
    )


def test_other_environment_entries_are_left_alone():
    result = check(parse_spec(deep_merge(REFERENCE_SPEC, {"environment": {"VLLM_LOGGING_LEVEL": "DEBUG"}})))
    assert "SI511" not in {f.code for f in result.findings}


# cdk.context.json: the same reader, its own limit.
@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"a": NaN}', "NaN is not a number JSON allows"),
        (b'{"a": 1e999}', "outside a double's range"),
        (b'{"a": ' + b"1" * 100 + b"}", "an integer of 100 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "nested"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b'{"a": 1', "not valid JSON (line 1"),
        (b"[]", "expected a JSON object"),
        (b'{"speculative-infra:hf-facts:acme/x": "text"}', "does not hold fetched facts"),
    ],
)
def test_a_hostile_context_file_is_exit_2(run_cli, tmp_path, content, reason):
    context = tmp_path / "cdk.context.json"
    context.write_bytes(content)
    spec = _spec_file(tmp_path, _reference_yaml())
    code, out, err = _finishes(run_cli, "check", str(spec), "--context", str(context))
    assert code == 2 and reason in err and "Traceback" not in err + out


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "too large"])
def test_a_context_file_that_is_not_a_small_regular_file_is_exit_2(run_cli, tmp_path, kind):
    context = tmp_path / "cdk.context.json"
    if kind == "fifo":
        os.mkfifo(context)
    elif kind == "directory":
        context.mkdir()
    elif kind == "device":
        context.symlink_to("/dev/zero")
    else:
        with context.open("wb") as handle:
            handle.truncate(MAX_CONTEXT_BYTES + 1)
    spec = _spec_file(tmp_path, _reference_yaml())
    code, _, err = _finishes(run_cli, "check", str(spec), "--context", str(context))
    assert code == 2 and "Traceback" not in err
    assert "cdk.context.json" in err


# Writing: nothing that is not a regular file is replaced, and no symlink is followed.
@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_writing_the_context_never_replaces_what_is_not_a_regular_file(tmp_path, kind):
    from speculative_infra.facts.context_file import ContextFileError, write_facts
    from speculative_infra.facts.hub_config import FetchedFacts

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    context = tmp_path / "cdk.context.json"
    if kind == "symlink":
        context.symlink_to(target)
    elif kind == "directory":
        context.mkdir()
    else:
        os.mkfifo(context)
    from speculative_infra.catalog import load_catalog

    model = load_catalog().models["Qwen/Qwen3-8B"]
    facts = FetchedFacts(repo_id="acme/x", revision="main", origin="test", kind="model", model=model)
    with pytest.raises(ContextFileError):
        _finishes(write_facts, context, facts)
    assert target.read_text() == "keep me"
    assert context.is_symlink() if kind == "symlink" else True


def test_write_text_replaces_a_regular_file_atomically_and_keeps_its_mode(tmp_path):
    from speculative_infra.safe_files import write_text

    path = tmp_path / "out.json"
    path.write_text("old")
    path.chmod(0o640)
    write_text(path, "new")
    assert path.read_text() == "new" and (path.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind


def test_plan_write_spec_refuses_a_symlink(run_cli, tmp_path):
    target = tmp_path / "precious.yaml"
    target.write_text("keep me")
    link = tmp_path / "best.yaml"
    link.symlink_to(target)
    code, _, err = run_cli(
        "plan", "recommend", "--model", "Qwen/Qwen3-8B", "--input-tokens", "512", "--output-tokens", "256",
        "--concurrency", "4", "--families", "g6e", "--write-spec", str(link),
    )  # fmt: skip
    assert code == 2 and "is a symbolic link" in err and "Traceback" not in err
    assert target.read_text() == "keep me"


# Fuzz: arbitrary values in every field of the spec, as YAML text and as construct props.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["auto", "0.15.1", "eagle3", "ml.g7e.2xlarge", "Qwen/Qwen3-8B", "32k", "1e30"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = [
    ("instance_count",),
    ("volume_size_in_gb",),
    ("inference_ami_version",),
    ("region",),
    ("serving",),
    ("model", "id"),
    ("model", "parameters_billion"),
    ("model", "num_key_value_heads"),
    ("model", "weights"),
    ("container", "version"),
    ("engine", "max_num_seqs"),
    ("engine", "max_model_len"),
    ("engine", "tensor_parallel_size"),
    ("engine", "gpu_memory_utilization"),
    ("engine", "max_num_batched_tokens"),
    ("engine", "kv_cache_dtype"),
    ("speculative", "num_speculative_tokens"),
    ("speculative", "method"),
    ("speculative", "model"),
    ("speculative", "parallel_drafting"),
    ("scaling",),
    ("scaling", "max_capacity"),
    ("scaling", "target_value"),
    ("environment",),
    ("environment", "SM_VLLM_MAX_NUM_SEQS"),
]


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = deep_merge(REFERENCE_SPEC, {"scaling": {"max_capacity": 2}})
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(_FIELDS), value=_values)
def test_fuzz_every_field_parses_or_is_a_spec_error_and_every_parsed_spec_checks(field, value):
    try:
        spec = parse_spec(_with(field, value))
    except SpecError as err:
        assert err.problems and all(isinstance(reason, str) and reason for _, reason in err.problems)
        return
    result = check(spec)  # never raises, whatever the rules meet
    json.dumps(result.as_dict(), allow_nan=False)  # and its report holds no NaN or infinity


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(
        alphabet=st.sampled_from(list("{}[]:,-&*!|>'\"#%@`?\n \t.0123456789eE+naifxyz")), max_size=300
    )
)
def test_fuzz_yaml_text_is_read_or_refused_with_a_spec_error(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_spec(path)
    except SpecError as err:
        assert err.problems


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.integers(min_value=1, max_value=12), width=st.integers(min_value=1, max_value=12))
def test_fuzz_alias_graphs_expand_within_the_limit_or_are_refused(tmp_path, levels, width):
    from speculative_infra.spec.bounded_yaml import MAX_EXPANDED_NODES

    lines = ["a0: &a0 [x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    data = deep_merge(REFERENCE_SPEC, {})
    engine = data.pop("engine")
    path = tmp_path / "bomb.yaml"
    body = "\n".join("  " + line for line in lines)
    path.write_text(yaml.safe_dump(data, sort_keys=False) + "engine:\n" + body + "\n")
    # Expanded size of the aliases alone: anchor i holds 1 + width x (size of anchor i - 1) nodes.
    size, sizes = 2, [2]
    for _ in range(1, levels):
        size = 1 + width * size
        sizes.append(size)
    aliases = sum(sizes) + levels  # and one key per anchor
    try:
        spec = load_spec(path)
    except SpecError as err:
        reasons = " ".join(reason for _, reason in err.problems)
        assert "aliases expand" in reasons and aliases > MAX_EXPANDED_NODES - 200, (aliases, reasons)
        return
    assert aliases <= MAX_EXPANDED_NODES  # read: then every alias was expanded within the limit
    assert engine and spec.engine.model_extra is not None


def test_a_spec_of_exactly_the_limit_is_read_as_yaml(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"#" * MAX_SPEC_BYTES)
    with pytest.raises(SpecError, match="the file is empty"):
        load_spec(path)


def test_absurd_props_are_refused_before_jsii_and_the_runtime_survives():
    # A NaN scaling target once passed the checks and then killed the jsii runtime for the process.
    from aws_cdk import App, Stack

    from speculative_infra import SpeculativeVllmEndpoint

    def build(**props: Any) -> None:
        stack = Stack(App(), "S", env={"region": "us-west-2"})
        SpeculativeVllmEndpoint(
            stack,
            "Llm",
            instance_type="ml.g7e.2xlarge",
            model_id="Qwen/Qwen3-8B",
            vllm_version="0.15.1",
            **props,
        )

    for props in (
        {"scaling": {"max_capacity": 2, "target_value": float("nan")}},
        {"instance_count": 10**30},
        {"engine": {"max_num_seqs": float("inf")}},
        {"environment": {"SM_VLLM_MAX_NUM_SEQS": "100000"}},
    ):
        with pytest.raises(ValueError) as raised:
            build(**props)
        assert "S/Llm" in str(raised.value)
    build(scaling={"max_capacity": 2})  # the same process still synthesizes


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--region", "us-east-1;rm -rf", "is not an AWS region name"),
        ("--role-arn", "arn:aws:iam::123:role/x", "is not an IAM role ARN"),
        ("--role-arn", "arn:aws:iam::123456789012:role/" + "r" * 65, "is not an IAM role ARN"),
        ("--s3-uri", "https://bucket/key", "is not an S3 URI"),
    ],
)
def test_preflight_flags_are_validated_before_any_call(run_cli, flag, value, reason):
    spec = "examples/specs/vllm-g7e-2xlarge.yaml"
    code, _, err = run_cli("preflight", spec, flag, value)
    assert code == 2 and reason in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("manifest", "template", "reason"),
    [
        ("[1]", None, "no 'artifacts' object"),
        ('{"artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "../x"}}}}',
         None, "is outside the assembly"),
        ('{"artifacts": {"S": {"type": "aws:cloudformation:stack"}}}', '{"Resources": {"A": "x"}}',
         "not shaped as a CloudFormation template"),
        ('{"artifacts": {"S": {"type": "aws:cloudformation:stack"}}}', '{"Resources": NaN}', "NaN"),
        ('{"artifacts": {"S": {"type": "aws:cloudformation:stack", "properties": {"templateFile": "a\\u0000b"}}}}',
         None, "is outside the assembly"),
        ('{"artifacts": {"S": {"type": "aws:cloudformation:stack"}}}',
         '{"Resources": {"E": {"Type": "AWS::SageMaker::Endpoint", "Properties": {"EndpointConfigName": '
         '{"Fn::GetAtt": []}}}, "T": {"Type": "AWS::ApplicationAutoScaling::ScalableTarget", "Properties": '
         '{"ScalableDimension": "sagemaker:variant:DesiredInstanceCount", "ResourceId": {"Fn::GetAtt": []}}}}}',
         None),
    ],
)  # fmt: skip
def test_preflight_refuses_a_malformed_cloud_assembly(run_cli, tmp_path, manifest, template, reason):
    (tmp_path / "manifest.json").write_text(manifest)
    if template is not None:
        (tmp_path / "S.template.json").write_text(template)
    code, _, err = run_cli("preflight", str(tmp_path), "--region", "us-east-1")
    if reason is None:  # read: an empty Fn::GetAtt names nothing, so the stack needs no instances
        assert "Traceback" not in err and code == 2 and "no AWS credentials" in err
        return
    assert code == 2 and reason in err and "Traceback" not in err


@pytest.mark.parametrize(
    "facts",
    [
        {"num_attention_heads": 8, "num_key_value_heads": 8},  # multi-head attention: one KV head per head
        {"num_attention_heads": 8, "num_key_value_heads": 1},  # multi-query attention
        {"num_hidden_layers": 4, "sliding_window_layers": 4},
        {"parameters_billion": 20, "active_parameters_billion": 20, "quantized_parameters_billion": 20},
        {"num_experts": 8, "experts_per_token": 8},
    ],
)
def test_equality_at_each_boundary_is_consistent(facts):
    from speculative_infra.model_consistency import model_facts_problems

    assert model_facts_problems(facts) == []
