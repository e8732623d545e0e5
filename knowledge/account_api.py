"""Sign-in for front ends on the API: `POST /api/auth/token`, `DELETE` it, `GET /api/me`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.parsers import FormParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from knowledge import accounts
from knowledge.api import JSON_PARSERS, KnownParameters, json_object
from knowledge.fields import TextField
from knowledge.throttling import AnonymousRateLimit

# Bounds before any hashing: a megabyte password would cost the server, not the caller.
USERNAME_MAX = 150  # django.contrib.auth's own
PASSWORD_MAX = 4096


class SignInSerializer(serializers.Serializer):
    username = TextField(max_length=USERNAME_MAX)
    password = TextField(max_length=PASSWORD_MAX, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="send as `Authorization: Token …` (or `Bearer …`)")
    username = serializers.CharField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField(help_text="may curate corpora in the admin")


class TokenView(APIView):
    """Sign in with a username and password for an API token (`POST`), or sign out,
    deleting it (`DELETE`, with the token): one token per user, so signing out signs out
    every client holding it."""

    # A form too, as DRF's own obtain_auth_token and `curl -d user=…&password=…` expect:
    # bounded as JSON is (DATA_UPLOAD_MAX_MEMORY_SIZE), and no session is made to forge.
    parser_classes = [*JSON_PARSERS, FormParser]

    def get_permissions(self) -> list[BasePermission]:
        if self.request.method == "POST":
            return [AnonymousRateLimit()]  # counted like any call without credentials
        return [AnonymousRateLimit(), IsAuthenticated()]

    @extend_schema(summary="Sign in for an API token", description=(
        "A username and password, as JSON or as a form (`application/x-www-form-urlencoded`), "
        "for the user's API token (one per user, made on first sign-in). Failures count "
        "towards LOGIN_FAILURES_LIMIT as the sign-in page's do."
    ), request={
        "application/json": SignInSerializer,
        "application/x-www-form-urlencoded": SignInSerializer,
    }, responses={
        200: TokenSerializer,
        400: OpenApiResponse(OpenApiTypes.OBJECT, description="a wrong username or password, "
                             "an inactive user, or a body that is not both as strings"),
        429: OpenApiResponse(OpenApiTypes.OBJECT, description="LOGIN_FAILURES_LIMIT failed "
                             "sign-ins for this username from this address; Retry-After"),
    })
    def post(self, request: Request) -> Response:
        body = json_object(request, ("username", "password"),
                           example='{"username": "ada", "password": "…"}')
        given = SignInSerializer(data=body)
        given.is_valid(raise_exception=True)
        try:
            token = accounts.sign_in(request=request._request, **given.validated_data)
        except accounts.SignInThrottled as exc:
            raise Throttled(
                wait=exc.retry_after,  # what is left of the window, not all of it
                detail="Too many failed sign-ins "
                + ("from your address" if exc.by == "address"
                   else "for this username from your address")
                + "; try again later.",
            ) from exc
        if token is None:
            raise ValidationError({"non_field_errors": [
                "Unable to sign in with this username and password."
            ]})
        return Response({"token": token.key, "username": token.user.get_username()})

    @extend_schema(summary="Sign out: delete your API token", description=(
        "Deletes the token the request is made with: one token per user, so every client "
        "holding it is signed out."
    ), responses={204: None})
    def delete(self, request: Request) -> Response:
        accounts.sign_out(user=request.user)
        return Response(status=204)


class MeView(KnownParameters, APIView):
    """Who the credentials sent belong to: a front end holding a token checks it here."""

    parameters = {"format"}  # anyone's, in no workspace

    @extend_schema(responses={200: MeSerializer})
    def get(self, request: Request) -> Response:
        user = request.user
        return Response({"username": user.get_username(), "is_staff": user.is_staff})
