"""The schema's house rules, declared once here rather than on each view: every operation
needing a signed-in user documents its 401 and every one its 429 (postprocessing hooks),
and a response's always-present fields are required (the AutoSchema)."""

from __future__ import annotations

import copy

from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers


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


THROTTLED = {
    "description": "too many requests (API_THROTTLE_ANON, API_THROTTLE_USER, and for a chat "
                   "turn API_THROTTLE_CHAT): try again after Retry-After seconds",
    "headers": {"Retry-After": {
        "description": "seconds to wait", "schema": {"type": "integer", "minimum": 0},
    }},
    "content": {"application/json": {"schema": {
        "type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"],
    }}},
}


def throttled_responses(result: dict, generator, **kwargs) -> dict:
    """Every API view is throttled (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES), so every
    operation may answer 429 with Retry-After; only two said so, and a generated client
    had no type for it. One an operation declares itself keeps its description and
    gains the header."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            # Copies: a YAML schema would show one shared object as anchors and aliases.
            declared = operation["responses"].setdefault("429", copy.deepcopy(THROTTLED))
            declared.setdefault("headers", copy.deepcopy(THROTTLED["headers"]))
    return result


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, with the fields every response carries marked required.

    A model serializer's own fields (those it builds from the model, not those declared
    on it) are always in its output, yet the model's defaults and blanks made most of
    them optional: a generated client typed `status?: StatusEnum` on every document.
    Declared fields keep their own `required` (a result's `message_id` is there only
    when one was asked for)."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        serializer = force_instance(serializer)
        if direction != "response" or not isinstance(serializer, serializers.ModelSerializer):
            return schema
        from_model = {
            name for name, field in serializer.fields.items()
            if name not in serializer._declared_fields and not field.write_only
        } & schema["properties"].keys()
        if from_model - set(schema.get("required", ())):
            schema["required"] = sorted(set(schema.get("required", ())) | from_model)
        return schema
