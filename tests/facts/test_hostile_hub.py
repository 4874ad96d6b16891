"""`facts fetch` against a hostile or broken Hub and careless input (issue 33): every case is exit 2 with a
message naming the problem, never a traceback, and the token never leaves the Hub's origin.

All through the real CLI entry point and real sockets (tests/facts/hub_stand_in.py); no test waits more
than about two seconds (the deadlines here are fractions of a second).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speculative_infra.catalog import load_catalog
from speculative_infra.cli.main import main
from speculative_infra.facts import FetchedFacts, context_key, facts_from_config
from speculative_infra.facts.hub_config import draft_problems, model_problems
from speculative_infra.facts.hub_reader import MAX_LISTING_BYTES, _Deadline, _Session
from speculative_infra.safe_files import MAX_CONFIG_BYTES
from tests.conftest import REFERENCE_SPEC
from tests.facts.hub_stand_in import (
    HubRepo,
    RequestLog,
    body_answer,
    hub_stand_in,
    json_answer,
    origin_stand_in,
    raw_answer,
    redirect_answer,
    reset_answer,
    stall_answer,
    trickle_answer,
)
from tests.facts.test_facts_fetch import GATED_MODEL, QWEN3_4B_HEAD

MODEL_FILES = {"model.safetensors": 6_400_000_000}
GATED_REPO = "acme/gated"
TOKEN = "hf_granted_token"


def fetch(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run `speculative-infra facts fetch ARGS`; (exit code, stdout + stderr)."""
    try:
        code = main(["facts", "fetch", *args])
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out + err


def assert_refused(code: int, output: str, *expected: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output, output
    for text in expected:
        assert text in output, f"{text!r} not in {output!r}"


@contextlib.contextmanager
def serving(monkeypatch: pytest.MonkeyPatch, **repos: HubRepo) -> Iterator[RequestLog]:
    """A stand-in Hub holding `repos` (keyword: the name under acme/) as HF_ENDPOINT."""
    with hub_stand_in({f"acme/{name}": repo for name, repo in repos.items()}) as (endpoint, log):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        yield log


@pytest.fixture(autouse=True)
def _no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)


def model_repo(**changes: Any) -> HubRepo:
    return HubRepo(config=GATED_MODEL, files=MODEL_FILES, **changes)


# --- 1. the token stays with its host ----------------------------------------------------------------


def test_token_is_dropped_on_a_redirect_to_another_origin(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with origin_stand_in({"/cdn/config.json": json_answer(GATED_MODEL)}) as (cdn, cdn_log):
        repo = model_repo(gated="manual", granted_tokens={TOKEN})
        repo.config_answer = redirect_answer(f"{cdn}/cdn/config.json")
        with serving(monkeypatch, gated=repo) as hub_log:
            code, output = fetch(capsys, GATED_REPO, "--context", str(tmp_path / "c.json"))
    assert code == 0, output
    assert cdn_log == ["/cdn/config.json"]  # the config came from the other origin ...
    assert cdn_log.authorizations == [None]  # ... which never saw the token
    assert hub_log.authorizations[-1] == f"Bearer {TOKEN}"  # the Hub itself did (the gated check passed)
    assert TOKEN not in output


def test_token_is_kept_on_a_redirect_within_the_hub(capsys, monkeypatch, tmp_path):
    # A renamed repository: the Hub redirects to the new name, on its own origin, where the token is needed.
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    old = model_repo(config_answer=redirect_answer("/acme/gated/resolve/main/config.json", 307))
    gated = model_repo(gated="manual", granted_tokens={TOKEN})
    with serving(monkeypatch, old=old, gated=gated) as log:
        code, output = fetch(capsys, "acme/old", "--context", str(tmp_path / "c.json"))
    assert code == 0, output
    assert log[-1] == "/acme/gated/resolve/main/config.json" and log.authorizations[-1] == f"Bearer {TOKEN}"


def test_token_is_not_sent_again_after_the_chain_left_the_hub(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    repo = model_repo()
    with hub_stand_in({"acme/m": repo}, routes={"/back/config.json": json_answer(GATED_MODEL)}) as (hub, log):
        monkeypatch.setenv("HF_ENDPOINT", hub)
        with origin_stand_in({"/away": redirect_answer(f"{hub}/back/config.json")}) as (other, other_log):
            repo.config_answer = redirect_answer(f"{other}/away")  # Hub -> other origin -> Hub
            code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert code == 0, output
    assert other_log.authorizations == [None]
    assert log == [
        "/api/models/acme/m/revision/main",
        "/acme/m/resolve/main/config.json",
        "/back/config.json",
    ]
    assert log.authorizations == [f"Bearer {TOKEN}", f"Bearer {TOKEN}", None]


def test_https_to_http_of_the_same_host_drops_the_token():
    # The endpoint is https://127.0.0.1:PORT; the request (as a redirect would make it) is http:// on the
    # same host and port: another origin, so no token. (No TLS here: the request is the plain-HTTP one.)
    with origin_stand_in({"/config.json": json_answer({})}) as (base, log):
        port = base.rsplit(":", 1)[1]
        session = _Session(f"https://127.0.0.1:{port}", TOKEN, _Deadline(2, 2))
        assert session.get_json(f"{base}/config.json", max_bytes=1000, what="config.json") == {}
        session_http = _Session(base, TOKEN, _Deadline(2, 2))
        session_http.get_json(f"{base}/config.json", max_bytes=1000, what="config.json")
    assert log.authorizations == [None, f"Bearer {TOKEN}"]


def test_redirects_are_bounded(capsys, monkeypatch, tmp_path):
    repo = model_repo(config_answer=redirect_answer("/acme/loop/resolve/main/config.json"))
    with serving(monkeypatch, loop=repo) as log:
        code, output = fetch(capsys, "acme/loop", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "more than 5 redirects")
    assert len(log) == 1 + 6  # the listing, then the config and five redirects


@pytest.mark.parametrize(
    "location", ["file:///etc/passwd", "ftp://127.0.0.1/config.json", "gopher://x/", "data:,{}"]
)
def test_redirects_go_to_http_and_https_only(capsys, monkeypatch, tmp_path, location):
    with serving(monkeypatch, m=model_repo(config_answer=redirect_answer(location))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "allowed: http:// and https:// URLs only")


def test_redirect_without_a_location(capsys, monkeypatch, tmp_path):
    with serving(monkeypatch, m=model_repo(config_answer=body_answer(b"", status=302))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "HTTP 302")


def test_a_token_with_control_characters_is_refused_without_showing_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf_secret\r\nX-Evil: 1")
    with serving(monkeypatch, m=model_repo()) as log:
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "HF_TOKEN")
    assert "hf_secret" not in output and log == []


def test_a_token_file_newline_is_dropped(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", f"{TOKEN}\n")
    with serving(monkeypatch, gated=model_repo(gated="manual", granted_tokens={TOKEN})):
        code, output = fetch(capsys, GATED_REPO, "--context", str(tmp_path / "c.json"))
    assert code == 0, output


@pytest.mark.parametrize(
    "endpoint", ["file:///etc", "ftp://hub", "https://", "https://user:pw@hub.example", "https://h/?q=1"]
)
def test_an_endpoint_that_is_not_an_http_url_is_refused(capsys, monkeypatch, tmp_path, endpoint):
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "HF_ENDPOINT", "allowed: an http:// or https:// URL")


# --- 2. one deadline for the whole fetch ---------------------------------------------------------------


def timed_fetch(capsys, *args: str) -> tuple[int, str, float]:
    start = time.monotonic()
    code, output = fetch(capsys, *args)
    return code, output, time.monotonic() - start


def test_a_trickling_server_does_not_hold_the_fetch(capsys, monkeypatch, tmp_path):
    body = json.dumps(GATED_MODEL).encode()  # ~300 bytes at 20 ms each: 6 s, were it waited for
    with serving(monkeypatch, m=model_repo(config_answer=trickle_answer(body, 0.02))):
        code, output, took = timed_fetch(
            capsys, "acme/m", "--deadline", "0.5", "--context", str(tmp_path / "c")
        )
    assert_refused(code, output, "within 0.5 s", "deadline")
    assert took < 1.5


def test_the_deadline_covers_all_requests_together(capsys, monkeypatch, tmp_path):
    # Each answer alone arrives within the deadline (~0.35 s); both together do not.
    listing = json.dumps({"siblings": [{"rfilename": "model.safetensors", "size": 6_400_000_000}]}).encode()
    config = json.dumps(GATED_MODEL).encode()
    repo = model_repo(
        info_answer=trickle_answer(listing, 0.35 / len(listing)),
        config_answer=trickle_answer(config, 0.35 / len(config)),
    )
    with serving(monkeypatch, m=repo):
        code, output, took = timed_fetch(
            capsys, "acme/m", "--deadline", "0.6", "--context", str(tmp_path / "c")
        )
    assert_refused(code, output, "config.json", "within 0.6 s")
    assert took < 1.5


@pytest.mark.parametrize("after_headers", [False, True], ids=["before-headers", "after-headers"])
def test_a_stalled_server_does_not_hold_the_fetch(capsys, monkeypatch, tmp_path, after_headers):
    repo = model_repo(config_answer=stall_answer(5, after_headers=after_headers))
    with serving(monkeypatch, m=repo):
        code, output, took = timed_fetch(
            capsys, "acme/m", "--deadline", "0.4", "--context", str(tmp_path / "c")
        )
    assert_refused(code, output, "within 0.4 s")
    assert took < 1.5


@pytest.mark.parametrize("where", ["status line", "headers"])
def test_a_server_trickling_its_status_line_or_headers_does_not_hold_the_fetch(
    capsys, monkeypatch, tmp_path, where
):
    # http.client reads the status line and headers itself: a byte every 50 ms never trips a socket
    # timeout, so the deadline's watchdog must end the connection.
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            prefix = b"" if where == "status line" else b"HTTP/1.1 200 OK\r\n"
            connection.sendall(prefix)
            while not stop.is_set():
                try:
                    connection.sendall(b"X" if where == "status line" else b"X-Slow: a\r\n"[:1])
                except OSError:
                    return
                stop.wait(0.05)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    try:
        code, output, took = timed_fetch(
            capsys, "acme/m", "--deadline", "0.5", "--context", str(tmp_path / "c")
        )
    finally:
        stop.set()
        listener.close()
    assert_refused(code, output, "within 0.5 s", "deadline")
    assert took < 3


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "99999"])
def test_the_deadline_is_a_sane_number(capsys, value):
    code, output = fetch(capsys, "acme/m", "--deadline", value)
    assert_refused(code, output, "--deadline", "seconds")


# --- 3. bounded answers --------------------------------------------------------------------------------

BIG_CONFIG = b'{"pad": "' + b"x" * MAX_CONFIG_BYTES + b'"}'


@pytest.mark.parametrize(
    "answer",
    [body_answer(BIG_CONFIG), body_answer(BIG_CONFIG, content_length=None)],
    ids=["declared", "streamed"],
)
def test_a_config_larger_than_its_limit_is_refused(capsys, monkeypatch, tmp_path, answer):
    with serving(monkeypatch, m=model_repo(config_answer=answer)):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "config.json is larger than 4 MiB")


def test_a_listing_larger_than_its_limit_is_refused(capsys, monkeypatch, tmp_path):
    big = b'{"pad": "' + b"x" * MAX_LISTING_BYTES + b'"}'
    with serving(monkeypatch, m=model_repo(info_answer=body_answer(big, content_length=None))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "file listing is larger than 16 MiB")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"hidden_size": NaN}', "NaN"),
        (b'{"hidden_size": Infinity}', "Infinity"),
        (b'{"hidden_size": 1e999}', "outside a double's range"),
        (b'{"hidden_size": ' + b"9" * 100 + b"}", "at most 64 digits"),
        (b"[" * 100 + b"]" * 100, "nested"),
        (b"[" * 100_000 + b"]" * 100_000, "nested"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_json_that_is_refused(capsys, monkeypatch, tmp_path, body, expected):
    with serving(monkeypatch, m=model_repo(config_answer=body_answer(body))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, expected, "config.json")


# --- 4. repository ids and revisions -------------------------------------------------------------------


@pytest.mark.parametrize(
    "repo_id",
    [
        "../etc/passwd",
        "acme/../../etc",
        "acme/a/b",
        "/acme",
        "acme/",
        "acme/%2e%2e",
        "acme/a%2Fb",
        "acme/ model",
        "acme/model\n",
        "acme/model?x=1",
        "acme/model#x",
        "acme/.model",
        "acme/model.",
        "acme/-model",
        "acme/model-",
        "acme/mo..del",
        "acme/mo--del",
        "acme/model.git",
        "acme/" + "m" * 97,
        "\uff41cme/model",  # a fullwidth letter
    ],
)
def test_repository_ids_are_validated_before_use(capsys, monkeypatch, tmp_path, repo_id):
    with serving(monkeypatch, m=model_repo()) as log:
        code, output = fetch(capsys, repo_id, "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "repository id", "allowed: ")
    assert log == [] and not (tmp_path / "c.json").exists()


def test_the_longest_repository_id_is_accepted(capsys, monkeypatch, tmp_path):
    name = "m" * 96
    with serving(monkeypatch, **{name: model_repo()}):
        code, output = fetch(capsys, f"acme/{name}", "--context", str(tmp_path / "c.json"))
    assert code == 0, output


@pytest.mark.parametrize(
    "revision", ["../main", "main/../x", "ma in", "main\n", "main\x00", "", "-rf", "a:b", "x" * 256, "a~1"]
)
def test_revisions_are_validated_before_use(capsys, monkeypatch, tmp_path, revision):
    with serving(monkeypatch, m=model_repo()) as log:
        code, output = fetch(
            capsys, "acme/m", f"--revision={revision}", "--context", str(tmp_path / "c.json")
        )
    assert_refused(code, output, "revision", "allowed: a branch, tag or commit")
    assert log == []


def test_a_pull_request_revision_is_url_quoted(capsys, monkeypatch, tmp_path):
    with serving(monkeypatch, m=model_repo()) as log:
        code, output = fetch(
            capsys, "acme/m", "--revision", "refs/pr/1", "--context", str(tmp_path / "c.json")
        )
    assert code == 0, output
    assert log[0] == "/api/models/acme/m/revision/refs/pr/1"  # sent as refs%2Fpr%2F1, unquoted by the server


# --- 5. malformed answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (raw_answer(b"HTTX/1.1 200 OK\r\n\r\n{}"), "not a valid HTTP answer"),
        (raw_answer(b"HTTP/1.1 two-hundred OK\r\n\r\n{}"), "not a valid HTTP answer"),
        (raw_answer(b"HTTP/1.1 200 " + b"O" * 70_000 + b"\r\n\r\n"), "not a valid HTTP answer"),
        (raw_answer(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n"), "not a valid HTTP answer"),
        (
            raw_answer(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n{}"),
            "more than 100 headers",
        ),
        (
            raw_answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
            "not a valid HTTP answer",
        ),
        (body_answer(b'{"a": 1}', content_length=1000), "cut short (8 of 1000 bytes arrived)"),
        (raw_answer(b""), "not a valid HTTP answer"),
        (reset_answer(), "config.json"),
        (body_answer(b"oops", status=500), "HTTP 500"),
        (body_answer(b"", status=418), "HTTP 418"),
        (raw_answer(b"HTTP/1.1 500 \x1b[2Jgone\r\nContent-Length: 0\r\n\r\n"), "HTTP 500 \\x1b[2Jgone"),
    ],
    ids=[
        "bad-protocol",
        "bad-status",
        "long-status-line",
        "long-header-line",
        "too-many-headers",
        "bad-chunk",
        "short-body",
        "closed-without-answer",
        "reset",
        "http-500",
        "http-418",
        "escape-in-reason",
    ],
)
def test_broken_http_is_a_clear_error(capsys, monkeypatch, tmp_path, answer, expected):
    with serving(monkeypatch, m=model_repo(config_answer=answer)):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, expected)


GOOD_SIBLINGS = [{"rfilename": "model.safetensors", "size": 6_400_000_000}]


@pytest.mark.parametrize(
    ("listing", "expected"),
    [
        ([GOOD_SIBLINGS], "the file listing's answer is [[{"),
        ("model", "the file listing's answer is 'model'; allowed: a JSON object"),
        ({"siblings": "model.safetensors"}, "'siblings' is 'model.safetensors'; allowed: a list"),
        ({"siblings": {"a": 1}}, "'siblings' is {'a': 1}; allowed: a list"),
        ({"siblings": [42]}, "file 0 is 42"),
        ({"siblings": [{"rfilename": 7, "size": 1}]}, "file 0 is"),
        (
            {"siblings": [{"rfilename": "model.safetensors", "size": "6400000000"}]},
            "size of 'model.safetensors' is '6",
        ),
        ({"siblings": [{"rfilename": "model.safetensors", "size": -1}]}, "size of 'model.safetensors' is -1"),
        ({"siblings": [{"rfilename": "model.safetensors", "size": True}]}, "is True; allowed: an integer"),
        ({"siblings": [{"rfilename": "model.safetensors", "size": 1.5}]}, "is 1.5; allowed: an integer"),
        ({"siblings": [{"rfilename": "model.safetensors", "size": 10**20}]}, "allowed: an integer from 0 to"),
        ({"siblings": GOOD_SIBLINGS, "safetensors": [1]}, "'safetensors' is [1]; allowed: an object"),
        ({"siblings": GOOD_SIBLINGS, "safetensors": {"total": 0}}, "'safetensors.total' is 0"),
        ({"siblings": GOOD_SIBLINGS, "safetensors": {"total": "3B"}}, "'safetensors.total' is '3B'"),
        ({"siblings": GOOD_SIBLINGS, "gated": {"yes": 1}}, "'gated' is {'yes': 1}"),
        ({"siblings": GOOD_SIBLINGS, "sha": ["abc"]}, "'sha' is ['abc']; allowed: a commit id"),
        ({"siblings": GOOD_SIBLINGS, "sha": "abc\r\nX-Evil: 1"}, "'sha' is 'abc\\r\\nX-Evil: 1'"),
    ],
)
def test_a_listing_of_the_wrong_json_types_is_a_clear_error(capsys, monkeypatch, tmp_path, listing, expected):
    with serving(monkeypatch, m=model_repo(info_answer=json_answer(listing))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "/api/models/acme/m", expected)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ([GATED_MODEL], "not a JSON object"),
        ("config", "not a JSON object"),
        ({**GATED_MODEL, "num_attention_heads": "24"}, "'num_attention_heads' (got str '24')"),
        ({**GATED_MODEL, "num_attention_heads": True}, "'num_attention_heads' (got bool True)"),
        ({**GATED_MODEL, "num_attention_heads": 24.0}, "'num_attention_heads' (got float 24.0)"),
        ({**GATED_MODEL, "num_key_value_heads": "8"}, "'num_key_value_heads' is str '8'"),
        ({**GATED_MODEL, "head_dim": -128}, "'head_dim' is int -128"),
        ({**GATED_MODEL, "vocab_size": [1]}, "'vocab_size' is list [1]"),
        ({**GATED_MODEL, "architectures": {"a": 1}}, "'architectures' is dict"),
        (
            {**GATED_MODEL, "architectures": [1, 2]},
            "'architectures' is list [1, 2]; allowed: a list of names",
        ),
        ({**GATED_MODEL, "model_type": ["llama"]}, "'model_type' is list"),
        ({**GATED_MODEL, "model_type": "llama\x1b]0;owned\x07"}, "allowed: a printable string"),
        ({**GATED_MODEL, "architectures": ["L" * 300]}, "allowed: a list of names"),
        ({**GATED_MODEL, "quantization_config": ["fp8"]}, "'quantization_config' is list"),
        ({**GATED_MODEL, "num_nextn_predict_layers": "1"}, "'num_nextn_predict_layers' is str '1'"),
        ({**QWEN3_4B_HEAD, "speculators_config": ["x"]}, "'speculators_config' is list"),
        ({**QWEN3_4B_HEAD, "transformer_layer_config": 5}, "'transformer_layer_config' is int 5"),
        ({**QWEN3_4B_HEAD, "speculators_config": {"verifier": "Qwen/Qwen3-4B"}}, "'verifier' is str"),
        ({**QWEN3_4B_HEAD, "speculators_config": {"verifier": {"name_or_path": 4}}}, "name_or_path is int 4"),
    ],
)
def test_a_config_of_the_wrong_json_types_is_a_clear_error(capsys, monkeypatch, tmp_path, config, expected):
    with serving(monkeypatch, m=model_repo(config_answer=json_answer(config))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, expected)


# --- 6. facts consistent with each other ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"num_key_value_heads": 7},
            "num_key_value_heads 7 does not divide num_attention_heads 24; allowed: a divisor",
        ),
        ({"num_key_value_heads": 48}, "num_key_value_heads 48 does not divide num_attention_heads 24"),
        ({"head_dim": 100_000}, "head_dim is 100000; allowed: 1 to 16384"),
        ({"head_dim": 1}, "head_dim x num_attention_heads is 24 for hidden_size 3072"),
        ({"head_dim": 4096}, "is 98304 for hidden_size 3072"),
        ({"max_position_embeddings": 2**40}, "max_position_embeddings is 1099511627776"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers is 1000000000; allowed: 1 to 10000"),
        ({"vocab_size": 10**12}, "vocab_size is 1000000000000"),
        ({"hidden_size": 10**30}, "hidden_size is"),
        ({"num_nextn_predict_layers": 29}, "mtp_layers 29 is more than num_hidden_layers 28"),
        ({"num_attention_heads": 10**40}, "num_attention_heads is"),
    ],
)
def test_inconsistent_model_facts_are_refused(capsys, monkeypatch, tmp_path, changes, expected):
    config = {**GATED_MODEL, **changes}
    with serving(monkeypatch, m=model_repo(config_answer=json_answer(config))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "acme/m: config.json gives facts the checks cannot use", expected)


def test_a_parameter_count_beyond_reason_is_refused(capsys, monkeypatch, tmp_path):
    listing = {"siblings": GOOD_SIBLINGS, "safetensors": {"total": 10**15}}
    with serving(monkeypatch, m=model_repo(info_answer=json_answer(listing))):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(code, output, "'safetensors.total' is 1000000000000000; allowed: an integer from 1 to")


def test_weights_beyond_reason_are_refused(capsys, monkeypatch, tmp_path):
    files = {f"model-{i}.safetensors": 10**15 for i in range(3)}  # each allowed, the sum is not
    with serving(monkeypatch, m=HubRepo(config=GATED_MODEL, files=files)):
        code, output = fetch(capsys, "acme/m", "--context", str(tmp_path / "c.json"))
    assert_refused(
        code, output, "the weights' size is int 3000000000000000 bytes; allowed: an integer from 0"
    )


def good_context_entry() -> dict[str, Any]:
    facts = facts_from_config(
        GATED_MODEL, repo_id="acme/x", revision="main", origin="o", parameters=3 * 10**9
    )
    return facts.model_dump(mode="json", exclude_none=True)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("model", "num_key_value_heads"), 7, "num_key_value_heads 7 does not divide"),
        (
            ("model", "sliding_window_layers"),
            29,
            "sliding_window_layers 29 is more than num_hidden_layers 28",
        ),
        (("model", "parameters_billion"), math.inf, r"parameters_billion[\s\S]*finite"),
        (("model", "weights_gb"), math.inf, r"weights_gb[\s\S]*finite"),
        (
            ("model", "active_parameters_billion"),
            4.0,
            "active_parameters_billion 4 is more than parameters_billion 3",
        ),
        (
            ("model", "experts_per_token: 9 is more than num_experts 8"),
            9,
            "experts_per_token: 9 is more than num_experts 8",
        ),
        (("repo_id",), "../../etc", "repository id"),
        (("revision",), "main\n", "revision"),
        (("kind",), "draft", "kind 'draft' holds"),
    ],
)
def test_facts_read_back_from_the_context_are_checked_the_same_way(run_cli, tmp_path, path, value, expected):
    entry = good_context_entry()
    if path == ("model", "experts_per_token"):
        entry["model"]["num_experts"] = 8
    target = entry
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match=expected if "[" in expected else re.escape(expected)):
        FetchedFacts.model_validate(entry)

    import yaml

    context = tmp_path / "cdk.context.json"
    context.write_text(json.dumps({context_key("acme/x"): entry}))  # inf is written as Infinity
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(REFERENCE_SPEC))
    code, out, err = run_cli("check", str(spec), "--context", str(context))
    # The context file's own reader may refuse Infinity first; either way `check` stops with exit 2.
    assert code == 2 and ("facts fetch acme/x" in err or "Infinity" in err), err
    assert "Traceback" not in out + err


def test_the_catalog_models_and_drafts_pass_the_consistency_checks():
    catalog = load_catalog()
    for repo_id, model in catalog.models.items():
        assert model_problems(model) == [], repo_id
    for repo_id, draft in catalog.drafts.items():
        assert draft_problems(draft) == [], repo_id


def test_a_draft_naming_a_local_path_as_target_has_an_unknown_target():
    head = {**QWEN3_4B_HEAD, "speculators_config": {"verifier": {"name_or_path": "/models/qwen3-4b"}}}
    facts = facts_from_config(head, repo_id="acme/h", revision="main", origin="o", weights_bytes=10**9)
    assert facts.draft is not None and facts.draft.target is None


# --- local folders -------------------------------------------------------------------------------------


def local_fetch(capsys, folder: Path, tmp_path: Path) -> tuple[int, str]:
    return fetch(capsys, "acme/local", "--from-folder", str(folder), "--context", str(tmp_path / "c.json"))


def test_a_folder_that_is_a_file_is_a_clear_error(capsys, tmp_path):
    (tmp_path / "file").write_text("{}")
    assert_refused(*local_fetch(capsys, tmp_path / "file", tmp_path), "not a directory")
    assert_refused(*local_fetch(capsys, tmp_path / "missing", tmp_path), "--from-folder", "cannot be read")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_config_that_is_a_fifo_is_refused_without_blocking(capsys, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    code, output, took = timed_fetch(
        capsys, "acme/local", "--from-folder", str(folder), "--context", str(tmp_path / "c.json")
    )
    assert_refused(code, output, "FIFO", "config.json")
    assert took < 1.5


def test_a_config_that_is_a_directory_or_too_large_is_refused(capsys, tmp_path):
    folder = tmp_path / "m"
    (folder / "config.json").mkdir(parents=True)
    assert_refused(*local_fetch(capsys, folder, tmp_path), "a directory", "config.json")
    (folder / "config.json").rmdir()
    (folder / "config.json").write_bytes(BIG_CONFIG)
    assert_refused(*local_fetch(capsys, folder, tmp_path), "larger than 4 MiB")
    (folder / "config.json").write_text('{"hidden_size": NaN}')
    assert_refused(*local_fetch(capsys, folder, tmp_path), "NaN")
    (folder / "config.json").write_text("[1, 2]")
    assert_refused(*local_fetch(capsys, folder, tmp_path), "not a JSON object")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_weights_are_sized_from_regular_files_only(capsys, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(GATED_MODEL))
    (tmp_path / "blob").write_bytes(b"\0" * 6000)
    (folder / "model-1.safetensors").symlink_to(tmp_path / "blob")  # as in the Hub's cache: counted
    (folder / "model-2.safetensors").write_bytes(b"\0" * 4000)
    os.mkfifo(folder / "model-3.safetensors")  # skipped: stat only, never opened
    (folder / "model-4.safetensors").symlink_to(folder / "model-5.safetensors")  # a loop: skipped
    (folder / "model-5.safetensors").symlink_to(folder / "model-4.safetensors")
    (folder / "model-6.safetensors").symlink_to(tmp_path / "gone")  # broken: skipped
    (folder / "model-7.safetensors").mkdir()  # a directory: skipped
    context = tmp_path / "c.json"
    code, output = fetch(capsys, "acme/local", "--from-folder", str(folder), "--context", str(context))
    assert code == 0, output
    stored = json.loads(context.read_text())[context_key("acme/local")]
    assert stored["model"]["weights_gb"] == 10_000 / 1e9


def test_a_folder_fetch_validates_the_repository_id(capsys, tmp_path):
    assert_refused(*fetch(capsys, "../x", "--from-folder", str(tmp_path)), "repository id")


# --- 7. property: any JSON answer is exit 0 or 2 -------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
CONFIG_KEYS = [
    "architectures",
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "max_position_embeddings",
    "torch_dtype",
    "vocab_size",
    "quantization_config",
    "text_config",
    "num_nextn_predict_layers",
    "mtp_num_hidden_layers",
    "speculators_config",
    "transformer_layer_config",
    "speculators_model_type",
    "parallel_drafting",
    "target_hidden_size",
]
LISTING_KEYS = ["siblings", "safetensors", "gated", "sha"]
FUZZED = HubRepo(config=GATED_MODEL, files=MODEL_FILES)


@pytest.fixture(scope="module")
def fuzz_hub() -> Iterator[str]:
    with hub_stand_in({"acme/fuzz": FUZZED}) as (endpoint, _):
        yield endpoint


def fuzz_fetch(capsys, endpoint: str, context: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_ENDPOINT", endpoint)
        mp.delenv("HF_TOKEN", raising=False)
        code, output = fetch(capsys, "acme/fuzz", "--context", str(context))
    assert code in (0, 2), output
    assert "Traceback" not in output


FUZZ_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ_SETTINGS
@given(value=JSON_VALUES, where=st.sampled_from(["config", "listing"]))
def test_any_json_answer_is_exit_0_or_2(capsys, fuzz_hub, tmp_path, value, where):
    FUZZED.config_answer = json_answer(value) if where == "config" else None
    FUZZED.info_answer = json_answer(value) if where == "listing" else None
    fuzz_fetch(capsys, fuzz_hub, tmp_path / "c.json")


@FUZZ_SETTINGS
@given(
    value=JSON_VALUES,
    key=st.sampled_from(CONFIG_KEYS),
    draft=st.booleans(),
)
def test_any_json_value_in_a_config_field_is_exit_0_or_2(capsys, fuzz_hub, tmp_path, value, key, draft):
    FUZZED.config_answer = json_answer({**(QWEN3_4B_HEAD if draft else GATED_MODEL), key: value})
    FUZZED.info_answer = None
    fuzz_fetch(capsys, fuzz_hub, tmp_path / "c.json")


@FUZZ_SETTINGS
@given(value=JSON_VALUES, key=st.sampled_from(LISTING_KEYS))
def test_any_json_value_in_a_listing_field_is_exit_0_or_2(capsys, fuzz_hub, tmp_path, value, key):
    listing = {"sha": "0" * 40, "siblings": GOOD_SIBLINGS, key: value}
    FUZZED.config_answer = None
    FUZZED.info_answer = json_answer(listing)
    fuzz_fetch(capsys, fuzz_hub, tmp_path / "c.json")
