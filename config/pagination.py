"""Pages of 50 by default; a client may ask for 1 to 200 with `?page_size=`.

A page or page size the list cannot give is a 400 naming the parameter, as on search:
not a 404, nor quietly 50 (`?page_size=0`) or 200 items (`?page_size=1000`).
"""

import copy

from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination

from knowledge.serializers import LAST_PAGE, PAGE_SCHEMA


def _checked(name: str, value: str, field: serializers.Field) -> int:
    try:
        return field.run_validation(value)
    except ValidationError as exc:
        raise ValidationError({name: exc.detail}) from exc


class Pages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    invalid_page_message = "Page {page_number} is past the last page."

    def get_page_size(self, request) -> int:
        size = request.query_params.get(self.page_size_query_param)
        if size is None:
            return self.page_size
        field = serializers.IntegerField(min_value=1, max_value=self.max_page_size)
        return _checked(self.page_size_query_param, size, field)

    def get_page_number(self, request, paginator) -> int:
        page = request.query_params.get(self.page_query_param)
        if page is None:
            return 1
        if page in self.last_page_strings:
            return paginator.num_pages
        return _checked(self.page_query_param, page, serializers.IntegerField(min_value=1))

    def paginate_queryset(self, queryset, request, view=None):
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound as exc:  # a valid number past the last page: the only one left
            raise ValidationError({self.page_query_param: [exc.detail]}) from exc

    def get_paginated_response_schema(self, schema: dict) -> dict:
        paginated = super().get_paginated_response_schema(schema)
        # Every page carries its links, null at either end: DRF's schema made them optional.
        paginated["required"] = sorted({*paginated.get("required", ()), "next", "previous"})
        return paginated

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
            elif parameter["name"] == self.page_query_param:
                # A number from 1, or "last" (last_page_strings), as search takes it.
                parameter["schema"] = copy.deepcopy(PAGE_SCHEMA)
                parameter["description"] = (
                    f"a page's number from 1, or `{LAST_PAGE}` for the last page"
                )
        return parameters
