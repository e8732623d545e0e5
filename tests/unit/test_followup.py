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
