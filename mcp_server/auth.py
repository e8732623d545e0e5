"""The MCP server's callers sign in with the REST API's own tokens (rest_framework.authtoken)."""

from __future__ import annotations

from django.db import close_old_connections
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed


class InvalidToken(PermissionError):
    """No active user holds this token."""


def user_for_token(key: str):
    """The active user whose API token `key` is; InvalidToken otherwise.

    DRF's own check, so a deleted token or a deactivated user is refused here
    exactly as the REST API refuses it.
    """
    close_old_connections()
    try:
        user, _token = TokenAuthentication().authenticate_credentials(key or "")
    except AuthenticationFailed as exc:
        raise InvalidToken(str(exc.detail)) from exc
    return user
