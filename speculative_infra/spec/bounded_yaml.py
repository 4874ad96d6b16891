"""YAML parsed with limits: aliases cannot multiply a small file into a huge document.

PyYAML's safe loader shares an aliased node instead of copying it, so loading a "billion laughs" file
is cheap; what explodes is everything after (validation, rendering, `json.dumps`), which walks the
shared nodes once per reference. The composed node graph is measured before anything is built:
its size with every alias expanded, its depth, recursive aliases and integer lengths.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from speculative_infra.safe_files import MAX_INT_DIGITS, MAX_NESTING

# A spec has about a hundred nodes; examples with every option have a few hundred.
MAX_EXPANDED_NODES = 100_000
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class BoundedYamlError(ValueError):
    """The YAML is well formed but too large, too deep or self-referencing once aliases expand."""


def _where(node: Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_scalar(node: ScalarNode) -> None:
    if node.tag == _INT_TAG and len(node.value.lstrip("+-").replace("_", "")) > MAX_INT_DIGITS:
        raise BoundedYamlError(
            f"{_where(node)}: an integer of {len(node.value)} digits; allowed: at most {MAX_INT_DIGITS} digits"
        )
    if node.tag == _FLOAT_TAG:
        text = node.value.lower().replace("_", "")
        try:
            finite = text.lstrip("+-") not in (".nan", ".inf") and math.isfinite(float(text))
        except ValueError:  # YAML 1.1's base-60 floats (1:30.5): PyYAML builds them, float() does not
            finite = True
        if not finite:
            raise BoundedYamlError(
                f"{_where(node)}: {node.value[:40]} is not a finite number; NaN and infinity are refused"
            )


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_keys(node: MappingNode) -> None:
    """A key given twice in one mapping: YAML keeps the last, silently dropping the first."""
    seen: dict[tuple[str, str], ScalarNode] = {}
    for key, _ in node.value:
        if not isinstance(key, ScalarNode) or key.tag == _MERGE_TAG:
            continue
        first = seen.setdefault((key.tag, key.value), key)
        if first is not key:
            raise BoundedYamlError(
                f"{_where(key)}: {key.value[:60]!r} is given twice in one mapping (first at {_where(first)}); "
                "YAML would keep the second and drop the first"
            )


def measure(root: Node) -> int:
    """The number of nodes with every alias expanded; BoundedYamlError past the limits.

    Depth is each node's height (the containers below it, aliases followed), memoised with its size: a
    node is measured once however often it is referenced, and a deep node referenced from a shallow
    place still counts its full height there.
    """
    expanded: dict[int, int] = {}  # node id -> expanded size, for nodes measured already
    height: dict[int, int] = {}  # node id -> containers on the longest path down from it (itself included)
    on_path: set[int] = set()
    # Iterative post-order walk: a deep document must not exhaust Python's recursion limit.
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            children = _children(node)
            expanded[key] = 1 + sum(expanded[id(c)] for c in children)
            height[key] = 1 + max((height[id(c)] for c in children), default=0)
            if expanded[key] > MAX_EXPANDED_NODES:
                raise BoundedYamlError(
                    f"{_where(node)}: aliases expand the document past {MAX_EXPANDED_NODES:,} values; "
                    "a spec needs a few hundred"
                )
            if height[key] > MAX_NESTING:
                raise BoundedYamlError(f"{_where(node)}: nested more than {MAX_NESTING} levels deep")
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise BoundedYamlError(f"{_where(node)}: an alias refers to a node that contains it")
        if isinstance(node, ScalarNode):
            _check_scalar(node)
            expanded[key], height[key] = 1, 0
            continue
        if isinstance(node, MappingNode):
            _check_keys(node)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in expanded)
    return expanded[id(root)]


class _DepthLimitedLoader(yaml.SafeLoader):
    """Stops composing past MAX_NESTING levels, long before Python's recursion limit (slow to unwind)."""

    _depth = 0

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # The scanner reads ahead while a simple key may be pending, which over unclosed '[' is quadratic:
        # stop it at the same depth as the composer.
        if self.flow_level >= MAX_NESTING:
            mark = self.get_mark()
            raise BoundedYamlError(
                f"line {mark.line + 1}, column {mark.column + 1}: nested more than {MAX_NESTING} levels deep"
            )
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING + 1:  # the containers, and a scalar inside the deepest
                raise BoundedYamlError(f"{_where_event(self)}: nested more than {MAX_NESTING} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _where_event(loader: yaml.SafeLoader) -> str:
    event = loader.peek_event()  # type: ignore[no-untyped-call]
    return f"line {event.start_mark.line + 1}, column {event.start_mark.column + 1}"


def load_bounded_yaml(text: str) -> Any:
    """One YAML document, checked by `measure` before it is constructed.

    Raises yaml.YAMLError for syntax errors and BoundedYamlError for documents past the limits or
    values YAML cannot build (a date such as 2001-02-30, `!!int abc`).
    """
    loader = _DepthLimitedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        measure(node)
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError, AttributeError, OverflowError) as err:
            raise BoundedYamlError(_unbuildable(node, err)) from None
    finally:
        loader.dispose()


def _unbuildable(root: Node, err: Exception) -> str:
    """Name the scalar YAML could not build (PyYAML's constructors raise without a position)."""
    probe = yaml.SafeLoader("")
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            try:
                probe.construct_object(node)
            except Exception:
                return (
                    f"{_where(node)}: {node.value[:60]!r} cannot be read as {node.tag.rsplit(':', 1)[-1]} "
                    f"({err}); quote it to give a string"
                )
        stack.extend(_children(node))
    return f"a value YAML cannot build ({err})"
