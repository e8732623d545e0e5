"""`Authorization: Bearer <token>` as well as DRF's `Token <token>`: the MCP server and
most HTTP clients send a bearer token, and the token is the same one."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the schema names it (beside DRF's own `tokenAuth`)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}
