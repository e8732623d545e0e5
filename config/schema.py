"""The schema's house rules, declared once here rather than on each view: every operation
needing a signed-in user documents its 401 and every one its 429, the 403, 406, 413 and
415 shared code answers are declared where they apply, error bodies have their
shape, a GET's ETag and 304 are declared (postprocessing hooks), and a response's
always-present fields are required and the 400 of a GET refusing unknown parameters
declared (the AutoSchema)."""

from __future__ import annotations

import copy

from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

UNTYPED = {"type": "object", "additionalProperties": {}}
ERROR = {
    "type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"],
    "description": "why, for people",
}
REFUSAL = {
    "type": "object",
    "description": "refused input: each field's reasons ({\"q\": [\"…\"]}, a list's item "
                   "by its index, {\"mentions\": {\"0\": {\"id\": [\"…\"]}}}), "
                   "non_field_errors, or a detail",
    "additionalProperties": {"anyOf": [
        {"type": "string"}, {"type": "array", "items": {"type": "string"}}, {"type": "object"},
    ]},
}


def unauthorized_responses(result: dict, generator, **kwargs) -> dict:
    for path in result.get("paths", {}).values():
        for operation in path.values():
            # An empty requirement ({}) is drf-spectacular's "anonymous is allowed".
            if {} not in operation.get("security", [{}]):
                operation["responses"].setdefault("401", {
                    "description": "no valid token or session (see WWW-Authenticate)",
                    "content": {"application/json": {"schema": copy.deepcopy(UNTYPED)}},
                })
    return result


THROTTLED = {
    "description": "too many requests (API_THROTTLE_ANON, API_THROTTLE_USER, for a chat "
                   "turn API_THROTTLE_CHAT, for a grounding check API_THROTTLE_GROUNDING): "
                   "try again after Retry-After seconds",
    "headers": {"Retry-After": {
        "description": "seconds to wait", "schema": {"type": "integer", "minimum": 0},
    }},
    "content": {"application/json": {"schema": UNTYPED}},  # error_bodies names it Error
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


# Answers streamed (a document's file, `*/*`; a chat turn's SSE) get no ETag, nor a 304.
STREAMED = {"*/*", "text/event-stream"}


def conditional_get_responses(result: dict, generator, **kwargs) -> dict:
    """Every GET answered in full has an ETag, and the same GET sent back with it in
    If-None-Match a bodiless 304 while the answer is unchanged (ConditionalGetMiddleware,
    docs/api.md): said nowhere in the schema, a generated client had no type for the 304
    a polling front end gets, and no name for the header to send."""
    etag = {
        "description": "the answer's version: send it back in If-None-Match",
        "schema": {"type": "string"},
    }
    for operations in result.get("paths", {}).values():
        operation = operations.get("get")
        full = (operation or {}).get("responses", {}).get("200")
        if full is None or STREAMED & set(full.get("content", {})):
            continue
        full.setdefault("headers", {})["ETag"] = copy.deepcopy(etag)
        operation["responses"].setdefault(
            "304",
            {
                "description": "not modified: the answer is still the one whose ETag was "
                "sent in If-None-Match (no body)",
                "headers": {"ETag": copy.deepcopy(etag)},
            },
        )
        operation.setdefault("parameters", []).append(
            {
                "in": "header",
                "name": "If-None-Match",
                "required": False,
                "description": "the ETag of an answer already held: a 304 while it is unchanged",
                "schema": {"type": "string"},
            }
        )
    return result


# The answers that carry a Location (absolute, as every link the API gives): a new job
# (an upload, a URL or a git URL), a new folder or conversation, a folder deleted by a worker.
LOCATED = {
    ("/api/documents", "post", "202"): "the job's address: poll it",
    ("/api/folders", "post", "201"): "the new folder's address",
    ("/api/folders/{id}", "delete", "202"): "the folder's address: a 404 once deleted",
    ("/api/threads", "post", "201"): "the new conversation's address",
}


def location_headers(result: dict, generator, **kwargs) -> dict:
    """The Location those answers send, declared: CORS exposes it to a front end on another
    origin (settings.CORS_EXPOSE_HEADERS), and a generated client had no name for it."""
    paths = result.get("paths", {})
    for (path, method, status), description in LOCATED.items():
        response = paths[path][method]["responses"][status]
        response.setdefault("headers", {})["Location"] = {
            "description": description,
            "schema": {"type": "string", "format": "uri"},
        }
    return result


# Where a workspace's reader is refused with a 403 (query_workspace and write_workspace
# with curating): adding, changing and deleting documents and folders, re-indexing, and
# cancelling a job are for its members and owner.
READERS_REFUSED = ("/api/documents", "/api/folders", "/api/jobs/")
WRITES = ("post", "put", "patch", "delete")
BODIES = ("post", "put", "patch")


# What an operation declaring no body of its own (a 202, a 204) answers in: DRF's renderer.
JSON = {"application/json"}


def _error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": copy.deepcopy(UNTYPED)}}}


def refusals_everywhere(result: dict, generator, **kwargs) -> dict:
    """Statuses the API answers from code every view shares, declared here once: a
    reader's 403, a body over its limit (413, RequestSizeMiddleware), a body of a type the
    operation does not parse (415, DRF), an Accept nothing offered matches (406: every
    operation but those answering any type, JSON-only ones too), a `?format=` none offers
    (400, config.negotiation). One an operation declares keeps its own."""
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation["responses"]
            responses.setdefault("400", _error("a `?format=` naming no format offered"))
            if method in WRITES and path.startswith(READERS_REFUSED):
                responses.setdefault("403", _error(
                    "you only read this workspace: its members and owner change it"
                ))
            if method in BODIES:
                responses.setdefault("413", _error(
                    "a body over its limit (DATA_UPLOAD_MAX_MEMORY_SIZE, for a multipart "
                    "upload INGEST_MAX_REQUEST_BYTES), refused from its Content-Length"
                ))
                responses.setdefault("415", _error(
                    "a body of another type than the operation takes (a form where JSON "
                    "is expected)"
                ))
            offered = {
                media for status, response in responses.items() if status.startswith("2")
                for media in response.get("content", {})
            }
            if "*/*" not in offered:  # an answer of any type (a file) is never refused
                responses.setdefault("406", _error(
                    f"an Accept header none of {', '.join(sorted(offered or JSON))} "
                    "matches (`text/html` alone: a browser opening the address)"
                ))
    return result


# Statuses whose body is always {"detail": …}: DRF's own errors, Http404, the handlers in
# config/urls.py and config/errors.py. A 400 names fields instead.
DETAIL_STATUSES = {"401", "403", "404", "405", "406", "409", "413", "415", "429", "503"}


def error_bodies(result: dict, generator, **kwargs) -> dict:
    """Error responses declared as a bare object get their shape: `Error` ({detail}) or,
    for a 400, `Refusal` ({field: [reasons]}); a generated client typed them all as
    unknown. A response that declares a schema of its own keeps it."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    used = set()
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get("application/json")
                name = "Refusal" if status == "400" else "Error"
                if body is None or body.get("schema") != UNTYPED or (
                    status != "400" and status not in DETAIL_STATUSES
                ):
                    continue
                body["schema"] = {"$ref": f"#/components/schemas/{name}"}
                used.add(name)
    for name, schema in (("Error", ERROR), ("Refusal", REFUSAL)):
        if name in used:
            schemas[name] = copy.deepcopy(schema)
    return result


UNKNOWN_PARAMETERS = (
    "a query parameter the endpoint does not take, or one given twice (`Unknown "
    "parameters: …`, `Given more than once: …`)"
)


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's, with the fields every response carries marked required, and the
    400 of every GET that refuses parameters it does not take (KnownParameters, in every
    view's `initial`: the view's own declarations never said so, `/api/me?foo=1` a 400 a
    generated client had no type for).

    A model serializer's own fields (those it builds from the model, not those declared
    on it) are always in its output, yet the model's defaults and blanks made most of
    them optional: a generated client typed `status?: StatusEnum` on every document.
    Declared fields keep their own `required` (a result's `message_id` is there only
    when one was asked for)."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        # Here, not at the top: DRF imports this module while knowledge.api's views are
        # being defined (extend_schema reads DEFAULT_SCHEMA_CLASS).
        from knowledge.api import KnownParameters

        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is not None and method in ("GET", "HEAD") and isinstance(
            self.view, KnownParameters
        ):
            # One the operation declares (a page out of range…) keeps its description.
            why = UNKNOWN_PARAMETERS
            if "workspace" in self.view.known_parameters():
                why += ", or a blank `workspace`"
            operation["responses"].setdefault("400", _error(why))
        return operation

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
