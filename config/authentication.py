"""`Authorization: Bearer <token>` as well as DRF's `Token <token>`: the MCP server and
most HTTP clients send a bearer token, and the token is the same one."""

from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"
