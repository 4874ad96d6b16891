"""Read a synthesized dashboard: its DashboardBody as JSON, and every metric its widgets plot.

For tests (ours and a user's) and for the picture in the docs. CloudFormation tokens in the body
(``{"Ref": ...}``, ``{"Fn::GetAtt": [...]}``) become ``${Ref}`` / ``${Logical.Attr}`` placeholders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from speculative_infra.constructs.cfn_tokens import render_tokens


def with_placeholders(token: Any) -> str:
    """A CloudFormation value as a string, references as ``${Logical}`` / ``${Logical.Attr}`` placeholders."""
    return render_tokens(
        token, ref=lambda name: f"${{{name}}}", getatt=lambda res, attr: f"${{{res}.{attr}}}"
    )


def read_dashboard_body(body: Any) -> dict[str, Any]:
    """The DashboardBody property of an AWS::CloudWatch::Dashboard, as JSON."""
    data: dict[str, Any] = json.loads(with_placeholders(body))
    return data


@dataclass(frozen=True)
class PlottedMetric:
    widget: str
    namespace: str
    name: str
    dimensions: dict[str, str]
    statistic: str
    period: int


def plotted_metrics(body: dict[str, Any]) -> list[PlottedMetric]:
    """Every metric the widgets of a dashboard plot (math expressions' inputs included), with the
    statistic CloudWatch uses for it (Average when the widget names none)."""
    found = []
    for widget in body["widgets"]:
        props = widget.get("properties", {})
        for row in props.get("metrics", []):
            options = row[-1] if row and isinstance(row[-1], dict) else {}
            names = [r for r in row if not isinstance(r, dict)]
            if "expression" in options or not names:
                continue
            if names[0] == ".":
                raise ValueError("abbreviated metric rows are not expected in a synthesized dashboard")
            namespace, name, *pairs = names
            found.append(
                PlottedMetric(
                    widget=str(props.get("title", widget["type"])),
                    namespace=namespace,
                    name=name,
                    dimensions=dict(zip(pairs[::2], pairs[1::2], strict=True)),
                    statistic=str(options.get("stat", props.get("stat", "Average"))),
                    period=int(options.get("period", props.get("period", 300))),
                )
            )
    return found
