"""Deterministic prompts of a fixed approximate token length.

There is no tokenizer here (the engine must run in a small Lambda). Prompts are built from
common lower-case English words, each of which is a single token, preceded by a space, for
the Llama, Qwen and GPT BPE vocabularies, so N words is close to N tokens; chat templates add a
few more. The server's ``usage.prompt_tokens`` is what results report when the server gives it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from .config import WorkloadConfig
from .datasets import DatasetPrompt

# Short, frequent words: one BPE token each (with the leading space) in common vocabularies.
_WORD_TEXT = """
    the of and to in is was for on that with as by at from his her it an be are this which or had
    not but have were they their one all there been has more when who will would can new first other
    some time only into out also two over about after its many most up than then them these so what
    she we him any may such our year made each state well both city under between world where while
    during three back down used known like found way since part same day great school long north
    south east west name people family small life game work house team high river early began must
    make before still around another place water film book music story field light church line local
    point power order head hand side open land court play home old end age air war king town road
    party free ship body sea sun tree stone gold red blue green black white dark fire art law room
    door car bird fish horse dog cat girl boy man woman child friend mother father son wife market
    price money trade farm food bread wine milk tea salt sugar cloth paper glass iron steel wood
    coal oil gas rain snow wind cloud star moon hill lake island bridge tower wall gate hall garden
    forest valley coast port station army navy
"""
_WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())


class Phase(StrEnum):
    """Role of a request in a level; only ``measured`` requests enter the statistics."""

    WARMUP = "warmup"
    MEASURED = "measured"
    FILLER = "filler"


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt split into the part shared by all requests and the part unique to one; or, from a
    dataset, the recorded chat messages."""

    shared_prefix: str
    unique: str
    messages: tuple[dict[str, str], ...] | None = None
    output_tokens: int | None = None
    """Tokens to generate for this request (``None``: the workload's ``output_tokens``)."""
    input_tokens: int | None = None
    """Estimated prompt tokens (``None``: the workload's ``input_tokens``)."""

    @property
    def text(self) -> str:
        """Single-string form for completions-style APIs (prefix first so it can be cached)."""
        if self.messages is not None:
            return "\n\n".join(m["content"] for m in self.messages)
        if not self.shared_prefix:
            return self.unique
        return f"{self.shared_prefix}\n\n{self.unique}"


def _words(rng: random.Random, count: int) -> str:
    if count <= 0:
        return ""
    return " ".join(rng.choices(_WORDS, k=count))


class PromptFactory:
    """Builds the prompt of request ``index`` in ``phase`` at concurrency ``level``.

    Prompts depend only on (seed, level, phase, index), so a rerun with the same seed sends the
    same prompts, and a resumed sweep continues exactly where it stopped. With
    ``fresh_prompts_per_level`` the level is part of the key, so no level repeats another's
    prompts (a repeat would be served from the prefix cache and flatter TTFT).
    """

    def __init__(self, workload: WorkloadConfig, dataset: Sequence[DatasetPrompt] | None = None) -> None:
        self._workload = workload
        self._seed = workload.seed if workload.seed is not None else 0
        prefix_rng = random.Random(f"prefix:{self._seed}")
        self._prefix = _words(prefix_rng, workload.shared_prefix_tokens)
        self._dataset = dataset

    @property
    def shared_prefix(self) -> str:
        return self._prefix

    @property
    def output_tokens(self) -> int:
        """The max_tokens of a request whose prompt does not ask for its own (formats.py sends it)."""
        return self._workload.output_tokens

    def prompt(self, level: int, phase: Phase, index: int) -> Prompt:
        level_key = level if self._workload.fresh_prompts_per_level else 0
        # A string seed goes through SHA-512 in random.Random: stable across processes and
        # independent of PYTHONHASHSEED.
        if self._dataset:
            return self._from_dataset(self._dataset, level_key, phase, index)
        rng = random.Random(f"{self._seed}:{level_key}:{phase.value}:{index}")
        unique_tokens = self._workload.input_tokens - self._workload.shared_prefix_tokens
        return Prompt(shared_prefix=self._prefix, unique=_words(rng, unique_tokens))

    def _from_dataset(
        self, dataset: Sequence[DatasetPrompt], level_key: int, phase: Phase, index: int
    ) -> Prompt:
        # Each (level, phase) walks the dataset from its own seeded starting point, so levels replay
        # different records while the dataset lasts, and a rerun with the same seed replays the same ones.
        start = random.Random(f"{self._seed}:{level_key}:{phase.value}").randrange(len(dataset))
        record = dataset[(start + index) % len(dataset)]
        recorded = (
            record.output_tokens
            if self._workload.dataset and self._workload.dataset.output_length == "record"
            else None
        )
        return Prompt(
            shared_prefix="",
            unique="",
            messages=record.messages,
            output_tokens=recorded,
            input_tokens=record.estimated_input_tokens,
        )
