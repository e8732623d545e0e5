from chat.followup import borrowed_topic, standalone_query


def test_first_question_is_its_own_query():
    assert standalone_query([], "When is the launch?") == "When is the launch?"


def test_follow_up_borrows_the_previous_topic():
    query = standalone_query(["When is the tidewatch 2.0 launch?"], "And what is its budget?")
    assert query.startswith("And what is its budget?")
    assert "tidewatch" in query and "launch" in query
    topic = borrowed_topic(["When is the tidewatch 2.0 launch?"], "And what is its budget?")
    assert topic == "tidewatch 2.0 launch" and query.endswith(f"({topic})")


def test_self_contained_question_is_left_alone():
    question = "How quickly must a security incident be reported to the team?"
    assert standalone_query(["When is the launch?"], question) == question


def test_new_topic_without_reference_is_not_polluted():
    question = "What is the airspeed of an unladen swallow?"
    assert standalone_query(["How fast must incidents be reported?"], question) == question


def test_a_chain_of_follow_ups_keeps_the_topic_it_started_from():
    asked = ["When is the tidewatch 2.0 launch?", "And what is its budget?"]
    topic = borrowed_topic(asked, "Who owns it?")
    assert topic.split() == ["budget", "tidewatch", "2.0", "launch"]
    asked.append("Who owns it?")
    assert borrowed_topic(asked, "Why?").split() == ["owns", "tidewatch", "2.0", "launch"]
    # A question standing on its own starts a new chain.
    asked.append("What is the hotel cap in London?")
    assert borrowed_topic(asked, "And in Tokyo?") == "hotel cap London"


def test_a_bare_question_word_is_a_follow_up():
    for question in ("Why?", "How so?", "Why is that?", "Is that true?"):
        assert borrowed_topic(["When is the tidewatch 2.0 launch?"], question), question


def test_words_that_point_at_nothing_borrow_nothing():
    before = ["When is the tidewatch 2.0 launch?"]
    for question in (
        "Is it allowed to expense alcohol?",
        "Is there a cap on hotel costs?",
        "What does this handbook say about on-call pay?",
        "Which team owns billing and payments?",
        "Who is the team that owns billing?",
        "Are there more than five holidays?",
    ):
        assert standalone_query(before, question) == question, question
