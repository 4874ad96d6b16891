"""Captured files -> a deduplicated ShareGPT dataset and its manifest."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .capture import Conversation, Dropped, conversation


@dataclass
class DatasetBuild:
    max_chars: int
    conversations: list[Conversation] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)
    lines: int = 0

    def add_lines(self, lines: Iterable[str]) -> None:
        for line in lines:
            if not line.strip():
                continue
            self.lines += 1
            try:
                found = conversation(line)
            except Dropped as why:
                self.dropped[str(why)] += 1
                continue
            if found.chars() > self.max_chars:
                self.dropped["oversized"] += 1
            elif found.key() in self.seen:
                self.dropped["duplicate"] += 1
            else:
                self.seen.add(found.key())
                self.conversations.append(found)

    def sharegpt_lines(self) -> str:
        return "".join(
            json.dumps(
                {
                    "id": conv.event_id or str(index),
                    "conversations": [{"from": who, "value": text} for who, text in conv.turns],
                },
                ensure_ascii=False,
            )
            + "\n"
            for index, conv in enumerate(self.conversations)
        )

    def manifest(self, sources: list[str], dataset_uri: str | None) -> dict[str, object]:
        return {
            "format": "sharegpt",
            "conversations": len(self.conversations),
            "lines_read": self.lines,
            "dropped": dict(sorted(self.dropped.items())),
            "sources": sources,
            "dataset_s3_uri": dataset_uri,
        }
