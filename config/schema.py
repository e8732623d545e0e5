"""A drf-spectacular postprocessing hook: every operation needing a signed-in user
documents its 401, declared once here rather than on each view."""

from __future__ import annotations


def unauthorized_responses(result: dict, generator, **kwargs) -> dict:
    for path in result.get("paths", {}).values():
        for operation in path.values():
            # An empty requirement ({}) is drf-spectacular's "anonymous is allowed".
            if {} not in operation.get("security", [{}]):
                operation["responses"].setdefault("401", {
                    "description": "no valid token or session (see WWW-Authenticate)",
                    "content": {"application/json": {
                        "schema": {"type": "object", "additionalProperties": {}}
                    }},
                })
    return result
