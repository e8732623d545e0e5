"""Strict string fields for the API's serializers: DRF's CharField reads a number or a
boolean as its text ({"name": 123} renamed a workspace "123"), where the rest of the API
refuses a value of the wrong type."""

from __future__ import annotations

from django.db import models
from rest_framework import serializers


class StrictString:
    """Refuses anything but a string, as CharField refuses a list: "Not a valid string."."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(
                serializers.CharField.default_error_messages["invalid"], code="invalid"
            )
        return super().to_internal_value(data)


class TextField(StrictString, serializers.CharField):
    """A CharField that refuses a number or a boolean instead of reading it as text."""


class SlugTextField(StrictString, serializers.SlugField):
    """A SlugField that refuses a number instead of reading it as a slug."""


class StrictStrings:
    """For a ModelSerializer: the fields it builds from the model's text columns refuse
    numbers too (a thread's title, a workspace's name)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: TextField,
        models.TextField: TextField,
        models.SlugField: SlugTextField,
    }


class AnyCaseChoiceField(serializers.ChoiceField):
    """A choice named in any case: `?status=failed` is FAILED. The one reading of a
    document's status the documents list (its filter) and MCP's list_sources share; any
    other value is refused as it was typed."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = self.choice_strings_to_values.get(data.upper(), data)
        return super().to_internal_value(data)
