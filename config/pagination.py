"""Pages of 50 by default; a client may ask for 1 to 200 with `?page_size=`."""

from rest_framework.pagination import PageNumberPagination


class Pages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
