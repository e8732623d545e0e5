"""Two conversations started at once by one user at CHAT_MAX_THREADS_PER_USER less one:
the race run for real (a second connection starts one while the first waits on the
user's row lock), and only one of them starts."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from chat import services
from chat.models import Thread
from tests.faults.test_deletion_races import meanwhile

pytestmark = pytest.mark.django_db(transaction=True)


def test_conversations_started_at_once_are_counted_one_by_one(user, workspace, settings):
    settings.CHAT_MAX_THREADS_PER_USER = 2
    services.create_thread(workspace=workspace, user=user, title="first")

    def start_theirs() -> None:
        services.create_thread(workspace=workspace, user=user, title="theirs")

    def hold_the_users_row() -> None:
        get_user_model().objects.select_for_update().get(pk=user.pk)

    with meanwhile(hold_the_users_row, start_theirs), pytest.raises(services.TooManyThreads):
        # Counted only once the other's is committed: two are held, and this one refused.
        services.create_thread(workspace=workspace, user=user, title="ours")
    assert sorted(Thread.objects.filter(user=user, workspace=workspace)
                  .values_list("title", flat=True)) == ["first", "theirs"]
