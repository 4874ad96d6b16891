"""Fixtures for the benchmark engine tests: a stand-in server process and AWS settings for boto3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .stand_ins.behavior import Behavior
from .stand_ins.server import ServerProcess

SCENARIOS: dict[str, Behavior] = {
    # Timings are short so the suite stays fast, long enough to stand above scheduler noise.
    "steady": Behavior(ttft_s=0.04, chunk_interval_s=0.004),
    "spec": Behavior(ttft_s=0.04, chunk_interval_s=0.008, tokens_per_chunk=3),
    "no_role": Behavior(ttft_s=0.03, chunk_interval_s=0.003, role_chunk=False),
    "no_usage": Behavior(ttft_s=0.02, chunk_interval_s=0.002, usage=False),
    "no_done": Behavior(ttft_s=0.02, chunk_interval_s=0.002, omit_done=True),
    "http500": Behavior(status=500),
    "http400": Behavior(status=400),
    "throttle2": Behavior(ttft_s=0.02, chunk_interval_s=0.002, status=429, error_first_n=2),
    "broken": Behavior(ttft_s=0.02, chunk_interval_s=0.002, break_after_chunks=3),
    "stall": Behavior(ttft_s=0.02, chunk_interval_s=0.002, stall_after_chunks=2),
    "error_event": Behavior(ttft_s=0.02, chunk_interval_s=0.002, error_event_after_chunks=2),
    "utf8_parts": Behavior(
        ttft_s=0.03, chunk_interval_s=0.003, tokens_per_chunk=2, text=" é漢🙂", part_size=5
    ),
    "one_byte_parts": Behavior(ttft_s=0.02, chunk_interval_s=0.002, text="ü", part_size=1),
    "lmi_sse": Behavior(ttft_s=0.03, chunk_interval_s=0.003, lmi_sse=True, part_size=7),
    "sm_throttle": Behavior(
        ttft_s=0.02, chunk_interval_s=0.002, sagemaker_error="ThrottlingException", error_first_n=1
    ),
    "sm_throttle_always": Behavior(sagemaker_error="ThrottlingException"),
    "sm_model_error": Behavior(sagemaker_error="ModelError"),
    "sm_stream_error": Behavior(ttft_s=0.02, chunk_interval_s=0.002, error_event_after_chunks=2),
    "sm_internal": Behavior(
        ttft_s=0.02,
        chunk_interval_s=0.002,
        error_event_after_chunks=2,
        stream_error_type="InternalStreamFailure",
    ),
    "sm_broken": Behavior(ttft_s=0.02, chunk_interval_s=0.002, break_after_chunks=2),
    "cli_flaky": Behavior(ttft_s=0.02, chunk_interval_s=0.002, status=500, error_first_n=1),
    "slow": Behavior(ttft_s=0.05, chunk_interval_s=0.05),
}


@pytest.fixture(scope="session")
def stand_in() -> Iterator[ServerProcess]:
    """One server process for the session (its own GIL: the client's timings are not disturbed)."""
    with ServerProcess(SCENARIOS) as server:
        yield server


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Dummy credentials and no shared config: boto3 signs requests that only reach 127.0.0.1."""
    empty = tmp_path_factory.mktemp("aws")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
    ):
        monkeypatch.delenv(name, raising=False)
