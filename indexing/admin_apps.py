"""django.contrib.admin with our site (indexing.admin_site) as `admin.site`; apart from
it because an app's config is imported before any model may be."""

from __future__ import annotations

from django.contrib.admin.apps import AdminConfig


class VerityAdminConfig(AdminConfig):
    default_site = "indexing.admin_site.VerityAdminSite"
