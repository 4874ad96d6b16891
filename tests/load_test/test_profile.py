"""The load test's configuration: each bound with its boundary, errors that name the field."""

from __future__ import annotations

import pytest

from speculative_infra.benchmark.distributed.profile import LEAD_S, MARGIN_S, LoadStep, LoadTestConfig
from speculative_infra.benchmark.schema import ConfigError

from .helpers import http_bench, load_test


def _refused(**kwargs):
    with pytest.raises(ConfigError) as error:
        kwargs.setdefault("steps", [{"duration_s": 60, "request_rate": 1}])
        load_test(kwargs.pop("steps"), **kwargs)
    return error.value


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({"duration_s": 60}, "request_rate"),
        ({"duration_s": 60, "request_rate": 1, "concurrency": 2}, "request_rate"),
        ({"duration_s": 60, "concurrency": 2, "ramp_to_rate": 3}, "ramp_to_rate"),
        ({"duration_s": 0, "request_rate": 1}, "duration_s"),
        ({"duration_s": 60, "request_rate": 0.001}, "request_rate"),
        ({"duration_s": 60, "concurrency": 0}, "concurrency"),
    ],
)
def test_a_step_needs_exactly_one_load_in_range(step, field):
    with pytest.raises(ConfigError) as error:
        LoadStep.from_dict(step)
    assert error.value.field == field


def test_open_and_closed_steps_do_not_mix():
    error = _refused(steps=[{"duration_s": 60, "request_rate": 1}, {"duration_s": 60, "concurrency": 2}])
    assert error.field == "steps" and "all steps open loop or all closed loop" in str(error)


def test_a_wave_and_its_drain_fit_one_lambda_invocation_exactly():
    budget = 900 - LEAD_S - MARGIN_S
    assert (
        load_test([{"duration_s": 60, "request_rate": 1}], wave_s=budget - 90, drain_s=90).wave_s
        == budget - 90
    )
    error = _refused(wave_s=budget - 90 + 0.001, drain_s=90)
    assert error.field == "wave_s" and "one Lambda invocation lives 900 s" in str(error)


def test_waves_times_workers_at_most_ten_thousand():
    # 100 waves of 10 s x 100 workers = 10,000 items: allowed; one more worker is not.
    steps = [{"duration_s": 1000, "request_rate": 1}]
    assert load_test(steps, wave_s=10, workers=100).waves == 100
    error = _refused(steps=steps, wave_s=10, workers=101)
    assert error.field == "workers" and "10000" in str(error)


def test_arrivals_are_bounded():
    error = _refused(steps=[{"duration_s": 7 * 86400, "request_rate": 1000}], wave_s=700, workers=1)
    assert error.field == "steps"


def test_waves_cover_the_duration():
    config = load_test(
        [{"duration_s": 100, "request_rate": 1}, {"duration_s": 50, "request_rate": 2}], wave_s=60
    )
    assert config.duration_s == 150 and config.waves == 3 and config.step_starts() == [0, 100]
    assert load_test([{"duration_s": 120, "request_rate": 1}], wave_s=60).waves == 2


def test_the_config_round_trips_through_json():
    config = LoadTestConfig(
        benchmark=http_bench(), steps=(LoadStep(duration_s=30, request_rate=2, ramp_to_rate=4),), workers=3
    )
    assert LoadTestConfig.from_dict(config.to_dict()) == config
