"""Extract per-release vLLM knowledge from vLLM's own released wheels.

For each vLLM version this script downloads the wheel (``pip download --no-deps
--only-binary=:all:``), hashes it, and reads the Python sources inside it *statically*
with :mod:`ast`. vLLM (and torch) are never imported.

What is extracted:

* every ``vllm serve`` flag: the serve parser is rebuilt by symbolically running
  ``make_arg_parser`` (found through ``vllm/entrypoints/cli/serve.py``), which calls
  ``FrontendArgs.add_cli_args`` and ``AsyncEngineArgs.add_cli_args`` (and thereby
  ``EngineArgs.add_cli_args``). ``get_kwargs(SomeConfig)`` is reproduced statically from
  the config dataclass's fields and type hints, following the same rules as vLLM's
  ``_compute_kwargs`` (bool -> ``BooleanOptionalAction``, ``Literal`` -> choices, ...).
* ``SpeculativeConfig``: field names, the values allowed for ``method``, the EAGLE3
  target allow-list (where one exists), and whether unknown keys are rejected.

Run ``python scripts/extract_vllm_release.py --all`` to regenerate
``speculative_infra/catalog/data/vllm/*.json`` and
``python scripts/extract_vllm_release.py --print-table`` to print the summary table.
"""
