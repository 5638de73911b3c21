# What the default model reads out of a message (rollout.model.understand): entities, dates and
# times, arithmetic, intents. Each case is a prompt a user types and the reading a person makes.
from __future__ import annotations

import datetime
from fractions import Fraction

import pytest

from rollout.model.understand import understand
from rollout.model.understand.arith import arithmetic_of, number_text
from rollout.model.understand.entities import entities_of
from rollout.model.understand.when import REFERENCE_DAY


@pytest.mark.parametrize(
    ("prompt", "result"),
    [
        ("What is 6 times 7?", "42"),
        ("subtract 5 from 12", "7"),
        ("What is 100 divided by 8", "12.5"),
        ("15% of 200", "30"),
        ("square root of 81", "9"),
        ("2 to the power of 10", "1024"),
        ("sum of 3, 4 and 5", "12"),
        ("1234 * 5678", "7,006,652"),
    ],
)
def test_arithmetic_is_done_exactly(prompt: str, result: str) -> None:
    math = arithmetic_of(prompt)
    assert math is not None and math.result_text == result


@pytest.mark.parametrize("prompt", ["call me at 555-1234", "the 2024-01-03 report", "hi"])
def test_no_arithmetic_where_none_is_asked(prompt: str) -> None:
    assert arithmetic_of(prompt) is None


def test_division_by_zero_is_said_to_be_undefined() -> None:
    math = arithmetic_of("7 / 0")
    assert math is not None and math.result is None and "undefined" in math.sentence()


def test_numbers_are_written_as_a_person_writes_them() -> None:
    assert [number_text(v) for v in (Fraction(42), 3.5, Fraction(1, 3), 12345.0)] == [
        "42",
        "3.5",
        "0.3333",
        "12,345",
    ]


def test_places_take_their_roles_from_from_and_to() -> None:
    e = entities_of("Find a flight from Boston to Chicago on March 3, 2027")
    assert (e.origin, e.destination) == ("Boston", "Chicago")
    assert e.dates == (datetime.date(2027, 3, 3),)
    bare = entities_of("Flights Madrid to Lisbon on 2027-03-01")
    assert (bare.origin, bare.destination) == ("Madrid", "Lisbon")


def test_relative_days_count_from_the_reference_day() -> None:
    e = entities_of("Schedule it tomorrow at 3pm")
    assert e.dates == (REFERENCE_DAY + datetime.timedelta(days=1),)
    assert e.times == ("15:00",)


def test_money_tickers_and_languages() -> None:
    e = entities_of("How much is 250 euros in Japanese yen?")
    assert e.amounts == ((250.0, "EUR"),) and e.currencies == ("EUR", "JPY")
    assert e.languages == ()  # "Japanese yen" is a currency, not a language
    assert entities_of("What's the stock price of AAPL?").tickers == ("AAPL",)
    assert entities_of("How does DNS work?").tickers == ()  # an acronym, not a ticker
    assert entities_of("How is Tesla stock doing?").tickers == ("TSLA",)
    assert entities_of('Translate "good morning" into French').languages[0] == "French"


def test_people_and_companies() -> None:
    assert entities_of("What's Carlos Rivera's email address?").people == ("Carlos Rivera",)
    e = entities_of("Pull out the order: 3 widgets for Acme Corp, shipped 2026-11-30")
    assert e.orgs == ("Acme Corp",) and e.numbers == (3.0,)


@pytest.mark.parametrize(
    ("prompt", "intent"),
    [
        ("hi", "small_talk"),
        ("Thanks!", "small_talk"),
        ("What was the temperature again?", "follow_up"),
        ("How many euros was that?", "follow_up"),
        ("Write a haiku about autumn", "creative"),
        ("Explain recursion", "explain"),
        ("Send an email to bob@example.com", "task"),
        ("Is it raining in Tokyo?", "question"),
        ("Extract the contact: Jane Doe, jane@acme.io", "transform"),
        ("Translate 'how are you?' into French", "task"),
    ],
)
def test_intents(prompt: str, intent: str) -> None:
    assert understand(prompt).intent == intent


def test_an_elliptical_follow_up_carries_the_previous_message() -> None:
    u = understand("What about MSFT?", before="What's the price of AAPL?")
    assert u.elliptical and u.entities.tickers[0] == "MSFT" and "stock" in u.concepts
