"""`speculative-infra facts fetch`: from a stand-in Hub or a local folder into cdk.context.json, then into
`check` and the constructs, offline."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
import yaml

from speculative_infra import CompatibilityError, SpeculativeVllmEndpoint
from speculative_infra.facts import context_key
from tests.conftest import REFERENCE_SPEC, deep_merge
from tests.facts.hub_stand_in import HubRepo, hub_stand_in

# A speculators-format EAGLE3 head for Qwen3-4B (hidden size 2560), and a model outside the catalog.
QWEN3_4B_HEAD = {
    "architectures": ["Eagle3Speculator"],
    "speculators_model_type": "eagle3",
    "transformer_layer_config": {"hidden_size": 2560, "vocab_size": 151936, "num_hidden_layers": 1},
    "draft_vocab_size": 32000,
    "speculators_config": {
        "verifier": {"name_or_path": "Qwen/Qwen3-4B", "architectures": ["Qwen3ForCausalLM"]}
    },
}
QWEN3_32B_HEAD = {
    **QWEN3_4B_HEAD,
    "transformer_layer_config": {"hidden_size": 5120, "vocab_size": 151936, "num_hidden_layers": 1},
    "speculators_config": {"verifier": {"name_or_path": "Qwen/Qwen3-32B"}},
}
GATED_MODEL = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}
REPOS = {
    "acme/Qwen3-4B-head.eagle3": HubRepo(config=QWEN3_4B_HEAD, files={"model.safetensors": 780_000_000}),
    "acme/Qwen3-32B-head.eagle3": HubRepo(config=QWEN3_32B_HEAD, files={"model.safetensors": 1_560_000_000}),
    "acme/Llama-3B-gated": HubRepo(
        config=GATED_MODEL,
        files={
            "model-00001-of-00002.safetensors": 4_000_000_000,
            "model-00002-of-00002.safetensors": 2_400_000_000,
        },
        parameters=3_210_000_000,
        gated="manual",
        granted_tokens={"hf_granted"},
    ),
}


@pytest.fixture
def hub(monkeypatch):
    with hub_stand_in(REPOS) as (endpoint, log):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield log


def _check(run_cli, tmp_path, spec, context):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, out, err = run_cli("check", str(path), "--format", "json", "--context", str(context))
    return code, (json.loads(out) if out else None), err


def test_fetched_draft_is_known_to_check(run_cli, hub, tmp_path):
    context = tmp_path / "cdk.context.json"
    context.write_text(json.dumps({"acknowledged-issue-numbers": [32775]}))
    spec = deep_merge(REFERENCE_SPEC, {"speculative": {"model": "acme/Qwen3-32B-head.eagle3"}})

    _, before, _ = _check(run_cli, tmp_path, spec, context)
    assert "SI411" in {f["code"] for f in before["findings"]}

    code, out, _ = run_cli("facts", "fetch", "acme/Qwen3-32B-head.eagle3", "--context", str(context))
    assert code == 0 and "draft, method eagle3, target Qwen/Qwen3-32B" in out
    stored = json.loads(context.read_text())
    assert stored["acknowledged-issue-numbers"] == [32775]  # other keys survive
    assert stored[context_key("acme/Qwen3-32B-head.eagle3")]["draft"]["size_gb"] == 1.56
    assert (
        stored[context_key("acme/Qwen3-32B-head.eagle3")]["draft"]["download_gb"] == 1.56
    )  # the files fetched
    assert "/api/models/acme/Qwen3-32B-head.eagle3/revision/main" in hub

    code, after, _ = _check(run_cli, tmp_path, spec, context)
    assert code == 0 and not {"SI407", "SI410", "SI411", "SI301"} & {f["code"] for f in after["findings"]}


def test_fetched_draft_for_another_hidden_size_is_refused(run_cli, hub, tmp_path):
    context = tmp_path / "cdk.context.json"
    assert run_cli("facts", "fetch", "acme/Qwen3-4B-head.eagle3", "--context", str(context))[0] == 0
    spec = deep_merge(REFERENCE_SPEC, {"speculative": {"model": "acme/Qwen3-4B-head.eagle3"}})
    code, result, _ = _check(run_cli, tmp_path, spec, context)
    [si407] = [f for f in result["findings"] if f["code"] == "SI407"]
    assert code == 1 and "hidden size 2560" in si407["message"] and "hidden size 5120" in si407["message"]


def test_gated_model_needs_a_token_to_fetch_and_to_deploy(run_cli, hub, tmp_path, monkeypatch):
    context = tmp_path / "cdk.context.json"
    code, _, err = run_cli("facts", "fetch", "acme/Llama-3B-gated", "--context", str(context))
    assert code == 2 and "HTTP 401" in err and "HF_TOKEN" in err and not context.exists()
    monkeypatch.setenv("HF_TOKEN", "hf_not_granted")
    code, _, err = run_cli("facts", "fetch", "acme/Llama-3B-gated", "--context", str(context))
    assert code == 2 and "HTTP 403" in err and "licence" in err
    monkeypatch.setenv("HF_TOKEN", "hf_granted")
    code, out, _ = run_cli("facts", "fetch", "acme/Llama-3B-gated", "--context", str(context))
    assert code == 0 and "3.21B parameters" in out and ", gated" in out

    spec = deep_merge(REFERENCE_SPEC, {"model": {"id": "acme/Llama-3B-gated"}, "speculative": None})
    code, result, _ = _check(run_cli, tmp_path, spec, context)
    codes = {f["code"] for f in result["findings"]}
    assert code == 1 and "SI531" in codes and "SI330" not in codes  # known now, but gated
    code, result, _ = _check(run_cli, tmp_path, {**spec, "hf_token_secret": "hf-token"}, context)
    assert code == 0, result["findings"]


def test_unknown_repository_is_a_clear_error(run_cli, hub, tmp_path):
    code, _, err = run_cli("facts", "fetch", "acme/nope", "--context", str(tmp_path / "c.json"))
    assert code == 2 and "HTTP 404" in err and "repository id" in err


def test_unreachable_hub_is_a_clear_error(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    code, _, err = run_cli("facts", "fetch", "acme/x", "--context", str(tmp_path / "c.json"))
    assert code == 2 and "cannot connect" in err


def test_local_folder(run_cli, tmp_path):
    folder = tmp_path / "head"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN3_32B_HEAD))
    (folder / "model.safetensors").write_bytes(b"\0" * 4096)
    (folder / "README.md").write_text("x" * 10_000)  # not weights
    context = tmp_path / "cdk.context.json"
    code, _, _ = run_cli(
        "facts", "fetch", "acme/local-head", "--from-folder", str(folder), "--context", str(context)
    )
    assert code == 0
    stored = json.loads(context.read_text())[context_key("acme/local-head")]
    assert stored["revision"] == "local" and stored["draft"]["size_gb"] == 4096 / 1e9


def test_folder_without_config_is_a_clear_error(run_cli, tmp_path):
    code, _, err = run_cli(
        "facts", "fetch", "a/b", "--from-folder", str(tmp_path), "--context", str(tmp_path / "c")
    )
    assert code == 2 and "config.json" in err


def test_broken_context_value_is_reported_by_check(run_cli, tmp_path):
    context = tmp_path / "cdk.context.json"
    context.write_text(json.dumps({context_key("acme/x"): {"kind": "draft"}}))
    code, _, err = _check(run_cli, tmp_path, REFERENCE_SPEC, context)
    assert code == 2 and "facts fetch acme/x" in err


def test_constructs_read_fetched_facts_from_the_cdk_context(run_cli, hub, tmp_path):
    context_path = tmp_path / "cdk.context.json"
    for repo in ("acme/Qwen3-4B-head.eagle3", "acme/Qwen3-32B-head.eagle3"):
        assert run_cli("facts", "fetch", repo, "--context", str(context_path))[0] == 0
    context = json.loads(context_path.read_text())

    def endpoint(draft: str, app_context: dict) -> SpeculativeVllmEndpoint:
        stack = cdk.Stack(cdk.App(context=app_context), "S", env=cdk.Environment(region="us-east-1"))
        return SpeculativeVllmEndpoint(
            stack,
            "E",
            model_id="Qwen/Qwen3-32B",
            instance_type="ml.g7e.2xlarge",
            engine={"max_model_len": 8192},
            speculative={"method": "eagle3", "model": draft, "num_speculative_tokens": 4},
        )

    ok = endpoint("acme/Qwen3-32B-head.eagle3", context)
    assert ok.resolved.draft is not None and ok.resolved.draft.size_gb == 1.56
    with pytest.raises(CompatibilityError, match="SI407"):
        endpoint("acme/Qwen3-4B-head.eagle3", context)
    unfetched = endpoint("acme/Qwen3-32B-head.eagle3", {})
    assert unfetched.resolved.draft is None  # without the context the draft is unknown (SI411 warns)


def test_config_facts_of_a_model():
    from speculative_infra.facts import facts_from_config

    config = {**GATED_MODEL, "num_nextn_predict_layers": 1, "quantization_config": {"quant_method": "fp8"}}
    facts = facts_from_config(config, repo_id="a/b", revision="r", origin="o", weights_bytes=3_000_000_000)
    m = facts.model
    assert facts.kind == "model" and m is not None
    assert (m.mtp_layers, m.quantization, m.vocab_size, m.head_dim, m.gated) == (1, "fp8", 128256, 128, None)
    assert m.parameters_billion == pytest.approx(1.5)  # 3 GB of bfloat16 weights
    no_mtp = facts_from_config(GATED_MODEL, repo_id="a/b", revision="r", origin="o", weights_bytes=2 * 10**9)
    assert no_mtp.model is not None and no_mtp.model.mtp_layers == 0
    with pytest.raises(ValueError, match="parameters_billion"):  # 1 byte of weights: no parameters
        facts_from_config(GATED_MODEL, repo_id="a/b", revision="r", origin="o", weights_bytes=1)
    multimodal = {"architectures": ["X"], "text_config": {**GATED_MODEL, "architectures": ["T"]}}
    mm = facts_from_config(multimodal, repo_id="a/b", revision="r", origin="o", parameters=10**9)
    assert mm.model is not None and mm.model.num_hidden_layers == 28


def test_config_facts_of_quantized_checkpoints():
    from speculative_infra.facts import facts_from_config

    ct = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "group_0": {
                "weights": {"type": "float", "num_bits": 8},
                "input_activations": {"type": "float", "num_bits": 8},
            }
        },
    }
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    for quant, expected in ((ct, ("compressed-tensors", "w8a8_fp8")), (nvfp4, ("modelopt_fp4", None))):
        config = {**GATED_MODEL, "quantization_config": quant}
        m = facts_from_config(config, repo_id="a/b", revision="r", origin="o", weights_bytes=3 * 10**9).model
        assert m is not None and (m.quantization, m.quantization_scheme) == expected
    # A 2:4 sparsity_config naming layers: the fetched facts say so, for SI205 (a dense one without targets
    # is no sparsity to vLLM).
    for sparsity_config, expected_sparsity in (
        ({"format": "dense", "sparsity_structure": "2:4", "targets": ["Linear"]}, "2:4"),
        ({"format": "dense", "sparsity_structure": "unstructured", "targets": ["Linear"]}, "other"),
        ({"format": "dense", "sparsity_structure": "2:4", "targets": []}, None),
    ):
        config = {**GATED_MODEL, "quantization_config": {**ct, "sparsity_config": sparsity_config}}
        m = facts_from_config(config, repo_id="a/b", revision="r", origin="o", weights_bytes=3 * 10**9).model
        assert m is not None and m.sparsity == expected_sparsity
    m = facts_from_config(
        {**GATED_MODEL, "quantization_config": {**nvfp4, "sparsity_config": {"targets": ["Linear"]}}},
        repo_id="a/b",
        revision="r",
        origin="o",
        weights_bytes=3 * 10**9,
    ).model
    assert m is not None and m.sparsity is None  # only compressed-tensors reads it


def test_fetched_facts_merged_over_a_catalog_entry_keep_their_nested_facts():
    # model_copy(update=...) would leave the fetched RoPE parameters as plain dicts, which the context
    # derivation cannot read; the merge validates them again.
    from speculative_infra.catalog import load_catalog
    from speculative_infra.catalog.models import ConfigLengths, RopeParameters
    from speculative_infra.facts.hub_config import FetchedFacts
    from speculative_infra.facts.overlay import catalog_with_facts

    catalog = load_catalog()
    model = catalog.models["Qwen/Qwen3-32B"].model_copy(
        update={"rope": (RopeParameters(rope_type="linear", factor=2.0),)}
    )
    draft = catalog.drafts["RedHatAI/Qwen3-32B-speculator.eagle3"].model_copy(
        update={"config_lengths": ConfigLengths(max_position_embeddings=2048)}
    )
    merged = catalog_with_facts(
        catalog,
        {
            "Qwen/Qwen3-32B": FetchedFacts(
                repo_id="Qwen/Qwen3-32B", revision="main", origin="test", kind="model", model=model
            ),
            "RedHatAI/Qwen3-32B-speculator.eagle3": FetchedFacts(
                repo_id="RedHatAI/Qwen3-32B-speculator.eagle3",
                revision="main",
                origin="test",
                kind="draft",
                draft=draft,
            ),
        },
    )
    assert isinstance(merged.models["Qwen/Qwen3-32B"].rope[0], RopeParameters)
    lengths = merged.drafts["RedHatAI/Qwen3-32B-speculator.eagle3"].config_lengths
    assert isinstance(lengths, ConfigLengths) and lengths.max_position_embeddings == 2048
