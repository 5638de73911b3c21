# The cases of tests/model/test_reads_like_a_model.py, domain by domain: a prompt, the tools
# offered (all of them unless a case says otherwise: the model must pick), the tool to call or
# none, the argument values, the canned results and what the answer says; follow-ups on an
# earlier turn, and answers in a JSON schema. Pure data (support.nlu_tools for the types).
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from support.nlu_tools import (
    ADD,
    ALL,
    CURRENCY,
    DATE,
    EMAIL,
    EVENT,
    FLIGHTS,
    MULTIPLY,
    READ_FILE,
    SHELL,
    STOCK,
    TRANSLATE,
    USER,
    WEATHER,
    Case,
    Eq,
    N,
    S,
    Turn,
    obj,
)

SUNNY = '{"temperature": 18, "unit": "C", "condition": "sunny"}'
SENT = '{"status": "sent", "id": "msg_123"}'
CREATED = '{"id": "evt_1", "status": "created"}'
FLIGHT = '{"flights": [{"airline": "United", "number": "UA 123", "depart": "08:15", "price": 189}]}'
GREETING = re.compile(r"\b(hello|hi|hey)\b", re.IGNORECASE)
BRANCH = re.compile(r"\bgit (branch|rev-parse|symbolic-ref|status(?!.*--short))")
PARIS = Turn(
    prompt="What's the weather in Paris?",
    tool="get_weather",
    arguments={"city": "Paris"},
    output=SUNNY,
    answer="It is 18 °C and sunny in Paris right now.",
)


def _case(id: str, prompt: str, tools: Sequence[Mapping[str, Any]] = ALL, **kw: Any) -> Case:
    return Case(id=id, prompt=prompt, tools=tools, **kw)


WEATHER_CASES = [
    _case("weather-paris", "What's the weather in Paris?", [WEATHER], tool="get_weather",
          args={"city": "Paris"}, results={"get_weather": SUNNY}, says=["18", "sunny", "Paris"]),
    _case("weather-paris-all", "What's the weather in Paris?", tool="get_weather",
          args={"city": Eq("Paris")}, results={"get_weather": SUNNY},
          says=["18", "sunny", "Paris"]),
    _case("weather-rain-tokyo", "Is it raining in Tokyo right now?", tool="get_weather",
          args={"city": "Tokyo"},
          results={"get_weather": '{"temperature": 22, "unit": "C", "condition": "rain"}'},
          says=["Tokyo", "rain", "22"]),
    _case("weather-cold-oslo", "How cold is it in Oslo today?", [WEATHER, EMAIL],
          tool="get_weather", args={"city": "Oslo"},
          results={"get_weather": '{"temperature": -4, "unit": "C", "condition": "snow"}'},
          says=["-4", "Oslo", "snow"]),
    _case("weather-umbrella-london", "Do I need an umbrella in London?", tool="get_weather",
          args={"city": "London"},
          results={"get_weather": '{"temperature": 11, "unit": "C", "condition": "light rain"}'},
          says=["London", "rain"]),
    _case("weather-two-cities", "What's the weather in Kyiv and in Lviv?", tool="get_weather",
          calls=2, args=[{"city": "Kyiv"}, {"city": "Lviv"}],
          results={"get_weather:Kyiv": '{"temperature": 3, "condition": "snow"}',
                   "get_weather:Lviv": '{"temperature": 1, "condition": "fog"}'},
          says=["Kyiv", "Lviv", "snow", "fog"]),
    _case("weather-fahrenheit", "What's the weather in Berlin in Fahrenheit?", [WEATHER],
          tool="get_weather", args={"city": "Berlin", "unit": Eq("fahrenheit")},
          results={"get_weather": '{"temperature": 64, "unit": "F", "condition": "cloudy"}'},
          says=["64", "cloudy", "Berlin"]),
]  # fmt: skip

ARITHMETIC_CASES = [
    _case("multiply-tool", "What's 6 times 7?", [MULTIPLY, ADD], tool="multiply",
          args={"a": 6, "b": 7}, results={"multiply": "42"}, says=["42"]),
    _case("multiply-no-tool", "What is 6 times 7?", [], says=["42"]),
    _case("multiply-unrelated-tools", "What's 17 times 23?", [WEATHER, EMAIL], says=["391"]),
    _case("add-tool", "Add 125 and 37.", [MULTIPLY, ADD], tool="add", args={"a": 125, "b": 37},
          results={"add": '{"result": 162}'}, says=["162"]),
    _case("multiply-decimal-all", "What is 2.5 multiplied by 4?", tool="multiply",
          args={"a": 2.5, "b": 4}, results={"multiply": '{"result": 10}'}, says=["10"]),
    _case("add-symbols-no-tool", "What's 15 + 27?", [], says=["42"]),
    _case("multiply-star-all", "Compute 12 * 12 for me.", tool="multiply",
          args={"a": 12, "b": 12}, results={"multiply": "144"}, says=["144"]),
    _case("subtract-no-tool", "What is 100 minus 58?", [], says=["42"]),
]  # fmt: skip

EMAIL_CASES = [
    _case("email-bob", "Email bob@example.com that the meeting moved to 3pm.", [EMAIL],
          tool="send_email", args={"to": Eq("bob@example.com"), "body": "meeting"},
          results={"send_email": SENT}, says=["bob@example.com"]),
    _case("email-bob-all", "Email bob@example.com that the meeting moved to 3pm.",
          tool="send_email", args={"to": Eq("bob@example.com"), "body": "3pm"},
          results={"send_email": SENT}, says=["bob@example.com"]),
    _case("email-subject", 'Send an email to alice@corp.com with the subject "Quarterly '
          'report" saying the numbers are in.', tool="send_email",
          args={"to": Eq("alice@corp.com"), "subject": "Quarterly report", "body": "numbers"},
          results={"send_email": SENT}, says=["alice@corp.com"]),
    _case("email-tell-team", "Can you write to dev-team@lists.example.org and tell them the "
          "release is fixed?", tool="send_email",
          args={"to": Eq("dev-team@lists.example.org"), "body": "fixed"},
          results={"send_email": SENT}, says=["dev-team@lists.example.org"]),
    _case("email-advice-no-call", "What's a good subject line for a thank-you email?", [EMAIL],
          says=["thank"], fresh=4),
]  # fmt: skip

CALENDAR_CASES = [
    _case("event-iso", 'Schedule a meeting called "Design review" on 2026-12-14 at 10:00.',
          [EVENT], tool="create_event",
          args={"title": "Design review", "date": Eq("2026-12-14"), "time": "10:00"},
          results={"create_event": CREATED}, says=["Design review", ("2026-12-14", "December 14")]),
    _case("event-spelled-date", "Add a dentist appointment to my calendar on March 3, 2027 at "
          "9:30.", tool="create_event",
          args={"title": "dentist", "date": Eq("2027-03-03"), "time": "9:30"},
          results={"create_event": CREATED}, says=[("dentist", "Dentist")]),
    _case("event-lunch", "Put lunch with Sam on my calendar for 2026-12-20 at 12:30.",
          tool="create_event", args={"title": "lunch", "date": Eq("2026-12-20"), "time": "12:30"},
          results={"create_event": CREATED}, says=["lunch"]),
    _case("event-offsite", 'Create an event "Team offsite" on January 15, 2027 at 14:00.',
          tool="create_event",
          args={"title": "Team offsite", "date": Eq("2027-01-15"), "time": "14:00"},
          results={"create_event": CREATED}, says=["Team offsite"]),
    _case("event-read-no-call", "What's on my calendar today?", [EVENT], fresh=3),
]  # fmt: skip

FLIGHT_CASES = [
    _case("flights-boston-chicago", "Find flights from Boston to Chicago on 2026-12-24.",
          [FLIGHTS], tool="search_flights",
          args={"origin": "Boston", "destination": "Chicago", "date": Eq("2026-12-24")},
          results={"search_flights": FLIGHT}, says=["UA 123", "189"]),
    _case("flights-spelled-date", "Search flights from London to New York on December 30, 2026.",
          tool="search_flights",
          args={"origin": "London", "destination": "New York", "date": Eq("2026-12-30")},
          results={"search_flights": FLIGHT}, says=["United", "189"]),
    _case("flights-to-before-from", "I need a flight to Tokyo from San Francisco on 2027-01-05.",
          tool="search_flights",
          args={"origin": "San Francisco", "destination": "Tokyo", "date": Eq("2027-01-05")},
          results={"search_flights": FLIGHT}, says=["UA 123"]),
    _case("flights-question", "Are there any flights from Paris to Rome on 2027-02-14?",
          tool="search_flights",
          args={"origin": "Paris", "destination": "Rome", "date": Eq("2027-02-14")},
          results={"search_flights": FLIGHT}, says=["08:15"]),
    _case("flights-bare", "Flights Madrid to Lisbon on 2027-03-01", tool="search_flights",
          args={"origin": "Madrid", "destination": "Lisbon", "date": Eq("2027-03-01")},
          results={"search_flights": FLIGHT}, says=["189"]),
]  # fmt: skip

STOCK_CASES = [
    _case("stock-aapl", "What's the price of AAPL?", [STOCK], tool="get_stock_price",
          args={"ticker": Eq("AAPL")},
          results={"get_stock_price": '{"ticker": "AAPL", "price": 189.5, "currency": "USD"}'},
          says=["189.5", "AAPL"]),
    _case("stock-msft-all", "How is MSFT trading today?", tool="get_stock_price",
          args={"ticker": Eq("MSFT")},
          results={"get_stock_price": '{"ticker": "MSFT", "price": 412.1, "currency": "USD"}'},
          says=["412.1", "MSFT"]),
    _case("stock-parenthesised", "Get me the stock price for Tesla (TSLA).",
          tool="get_stock_price", args={"ticker": Eq("TSLA")},
          results={"get_stock_price": '{"ticker": "TSLA", "price": 251.2}'}, says=["251.2"]),
    _case("stock-share-price", "Check the NVDA share price.", tool="get_stock_price",
          args={"ticker": Eq("NVDA")},
          results={"get_stock_price": '{"ticker": "NVDA", "price": 131.4}'}, says=["131.4"]),
]  # fmt: skip

CURRENCY_CASES = [
    _case("currency-usd-eur", "Convert 100 USD to EUR.", [CURRENCY], tool="convert_currency",
          args={"amount": 100, "from": Eq("USD"), "to": Eq("EUR")},
          results={"convert_currency": '{"amount": 92.3, "currency": "EUR"}'},
          says=["92.3", ("EUR", "euro")]),
    _case("currency-words", "How much is 250 euros in Japanese yen?", tool="convert_currency",
          args={"amount": 250, "from": Eq("EUR"), "to": Eq("JPY")},
          results={"convert_currency": '{"amount": 40250, "currency": "JPY"}'},
          says=[("40250", "40,250")]),
    _case("currency-lowercase-please", "convert 50 GBP to USD please", tool="convert_currency",
          args={"amount": 50, "from": Eq("GBP"), "to": Eq("USD")},
          results={"convert_currency": '{"amount": 63.5, "currency": "USD"}'}, says=["63.5"]),
    _case("currency-thousands", "What's 1,000 CHF in dollars?", tool="convert_currency",
          args={"amount": 1000, "from": Eq("CHF"), "to": Eq("USD")},
          results={"convert_currency": '{"amount": 1130, "currency": "USD"}'},
          says=[("1130", "1,130")]),
    _case("currency-exchange", "Exchange 20 CAD into MXN.", tool="convert_currency",
          args={"amount": 20, "from": Eq("CAD"), "to": Eq("MXN")},
          results={"convert_currency": '{"amount": 284.6, "currency": "MXN"}'}, says=["284.6"]),
]  # fmt: skip

TRANSLATION_CASES = [
    _case("translate-spanish", 'Translate "good morning" into Spanish.', [TRANSLATE],
          tool="translate", args={"text": Eq("good morning"), "target_language": ("Spanish", "es")},
          results={"translate": '{"translation": "buenos días"}'}, says=["buenos días"]),
    _case("translate-say-in", "How do you say 'thank you' in French?", tool="translate",
          args={"text": Eq("thank you"), "target_language": ("French", "fr")},
          results={"translate": '{"translation": "merci"}'}, says=["merci"]),
    _case("translate-german", "Translate 'where is the station' to German", tool="translate",
          args={"text": Eq("where is the station"), "target_language": ("German", "de")},
          results={"translate": '{"translation": "Wo ist der Bahnhof?"}'},
          says=["Wo ist der Bahnhof"]),
    _case("translate-please", 'Please translate "I love this city" into Italian.',
          tool="translate", args={"text": Eq("I love this city"),
                                  "target_language": ("Italian", "it")},
          results={"translate": '{"translation": "Amo questa città"}'}, says=["Amo questa città"]),
    _case("translate-japanese", "Translate 'cheers' to Japanese.", tool="translate",
          args={"text": Eq("cheers"), "target_language": ("Japanese", "ja")},
          results={"translate": '{"translation": "乾杯"}'}, says=["乾杯"]),
]  # fmt: skip

FILE_CASES = [
    _case("file-read", "Read the file notes/todo.txt", [READ_FILE], tool="read_file",
          args={"path": Eq("notes/todo.txt")}, results={"read_file": "- buy milk\n- call Sam\n"},
          says=["buy milk"]),
    _case("file-absolute", "What's in /etc/hostname?", tool="read_file",
          args={"path": Eq("/etc/hostname")}, results={"read_file": "web-01\n"}, says=["web-01"]),
    _case("file-yaml", "Show me the contents of config/settings.yaml.", tool="read_file",
          args={"path": Eq("config/settings.yaml")},
          results={"read_file": "debug: true\nport: 8080\n"}, says=["8080"]),
    _case("file-question", "Open README.md and tell me what the project is called.",
          tool="read_file", args={"path": Eq("README.md")},
          results={"read_file": "# Skylark\nA tiny web framework.\n"}, says=["Skylark"]),
    _case("file-summarize", "Summarize docs/intro.md", tool="read_file",
          args={"path": Eq("docs/intro.md")},
          results={"read_file": "Skylark serves HTTP with one file of Python.\n"},
          says=["HTTP"]),
]  # fmt: skip

SHELL_CASES = [
    _case("shell-ls", "list the files in src/", [SHELL], tool="run_shell", calls=(1, 3),
          args={"command": re.compile(r"\bls\b.*src")},
          results={"run_shell": "main.py\nutils.py\n__init__.py\n"}, says=["main.py", "utils.py"]),
    _case("shell-ls-all", "list the files in src/", tool="run_shell", calls=(1, 3),
          args={"command": re.compile(r"\bsrc\b")},
          results={"run_shell": "main.py\nutils.py\n__init__.py\n"}, says=["main.py"]),
    _case("shell-pytest", "Run the tests with pytest", [SHELL], tool="run_shell", calls=(1, 2),
          args={"command": re.compile(r"\bpytest\b")},
          results={"run_shell": "===== 12 passed in 0.50s =====\n"}, says=["12 passed"]),
    _case("shell-wc", "How many lines are in main.py? Use the shell.", tool="run_shell",
          calls=(1, 2), args={"command": re.compile(r"\bwc\b.*main\.py")},
          results={"run_shell": "120 main.py\n"}, says=["120"]),
    _case("shell-git-branch", "What's the current git branch?", tool="run_shell", calls=(1, 2),
          args={"command": BRANCH},
          results={"run_shell": "* main\n"},
          says=["main"]),
]  # fmt: skip

LOOKUP_CASES = [
    _case("user-by-name", "Look up the user Jane Doe.", [USER], tool="get_user",
          args={"name": Eq("Jane Doe")},
          results={"get_user": '{"name": "Jane Doe", "email": "jane@acme.io", "team": "Platform"}'},
          says=["jane@acme.io"]),
    _case("user-email-all", "What's Carlos Rivera's email address?", tool="get_user",
          args={"name": Eq("Carlos Rivera")},
          results={"get_user": '{"name": "Carlos Rivera", "email": "carlos@rivera.dev"}'},
          says=["carlos@rivera.dev"]),
    _case("user-team-all", "Which team is Priya Patel on?", tool="get_user",
          args={"name": Eq("Priya Patel")},
          results={"get_user": '{"name": "Priya Patel", "team": "Data Platform"}'},
          says=["Data Platform"]),
    _case("word-define", "Define the word 'ephemeral'.", tool="lookup_word",
          args={"word": Eq("ephemeral")},
          results={"lookup_word": '{"definition": "lasting for a very short time"}'},
          says=["short time"]),
    _case("word-mean", "What does serendipity mean?", tool="lookup_word",
          args={"word": Eq("serendipity")},
          results={"lookup_word": '{"definition": "finding good things by chance"}'},
          says=["chance"]),
]  # fmt: skip

SMALL_TALK_CASES = [
    _case("talk-hi", "hi", says=[GREETING], fresh=3),
    _case("talk-thanks", "thanks", says=[("welcome", "glad", "pleasure", "anytime")], fresh=2),
    _case("talk-haiku", "Write a haiku about autumn", lines=3, fresh=4,
          says=[("autumn", "leaves", "leaf", "fall")]),
    _case("talk-recursion", "Explain recursion", says=[("recursion", "recursive")], fresh=6),
    _case("talk-how-are-you", "How are you?", [], fresh=3),
    _case("talk-joke", "Tell me a joke.", fresh=4),
    _case("talk-good-morning", "Good morning!", [WEATHER], says=["morning"], fresh=3),
    _case("talk-capital", "What is the capital of France?", says=[("Paris", "France")]),
]  # fmt: skip

FOLLOW_UP_CASES = [
    _case("follow-temperature", "What was the temperature again?", [WEATHER], history=[PARIS],
          says=["18"]),
    _case("follow-temperature-all", "What was the temperature again?", history=[PARIS],
          says=["18"]),
    _case("follow-other-city", "And in London?", history=[PARIS], tool="get_weather",
          args={"city": Eq("London")},
          results={"get_weather": '{"temperature": 12, "unit": "C", "condition": "cloudy"}'},
          says=["12", "London", "cloudy"]),
    _case("follow-thanks", "thanks!", history=[Turn(
        prompt="Email bob@example.com that I'm running late.", tool="send_email",
        arguments={"to": "bob@example.com", "subject": "Running late", "body": "I'm running late."},
        output=SENT, answer="Done: I sent bob@example.com a note that you're running late.")],
        says=[("welcome", "glad", "pleasure", "anytime")]),
    _case("follow-other-ticker", "What about MSFT?", history=[Turn(
        prompt="What's the price of AAPL?", tool="get_stock_price", arguments={"ticker": "AAPL"},
        output='{"ticker": "AAPL", "price": 189.5}', answer="AAPL is trading at $189.50.")],
        tool="get_stock_price", args={"ticker": Eq("MSFT")},
        results={"get_stock_price": '{"ticker": "MSFT", "price": 412.1}'}, says=["412.1"]),
    _case("follow-times-that", "Now multiply that by 2.", history=[Turn(
        prompt="What's 6 times 7?", tool="multiply", arguments={"a": 6, "b": 7}, output="42",
        answer="6 times 7 is 42.")], tool="multiply", args={"a": 42, "b": 2},
        results={"multiply": "84"}, says=["84"]),
    _case("follow-converted", "How many euros was that?", history=[Turn(
        prompt="Convert 100 USD to EUR.", tool="convert_currency",
        arguments={"amount": 100, "from": "USD", "to": "EUR"},
        output='{"amount": 92.3, "currency": "EUR"}', answer="100 USD is 92.30 EUR.")],
        says=[("92.3", "92.30")]),
    _case("follow-translate-again", "And in French?", history=[Turn(
        prompt='Translate "good morning" into Spanish.', tool="translate",
        arguments={"text": "good morning", "target_language": "Spanish"},
        output='{"translation": "buenos días"}', answer='"Good morning" is "buenos días".')],
        tool="translate", args={"text": Eq("good morning"), "target_language": ("French", "fr")},
        results={"translate": '{"translation": "bonjour"}'}, says=["bonjour"]),
]  # fmt: skip

CONTACT = obj(name=S, email=S, city=S)
STRUCTURED_CASES = [
    _case("json-contact", "Extract the contact: Jane Doe, jane@acme.io, Berlin", [],
          schema=CONTACT, fields={"name": "Jane", "email": Eq("jane@acme.io"),
                                  "city": Eq("Berlin")}),
    _case("json-contact-all", "Extract the contact: Jane Doe, jane@acme.io, Berlin",
          schema=CONTACT, fields={"name": "Jane", "email": Eq("jane@acme.io"),
                                  "city": Eq("Berlin")}),
    _case("json-order", "Pull out the order: 3 widgets for Acme Corp, shipped 2026-11-30", [],
          schema=obj(customer=S, quantity={"type": "integer"}, item=S, date=DATE),
          fields={"customer": "Acme", "quantity": 3, "item": "widget",
                  "date": Eq("2026-11-30")}),
    _case("json-event", "Event: Product launch in Tokyo on 2027-04-01", [],
          schema=obj(title=S, city=S, date=DATE),
          fields={"title": "Product launch", "city": Eq("Tokyo"), "date": Eq("2027-04-01")}),
    _case("json-after-tool", "What's the weather in Paris? Answer as JSON.", [WEATHER],
          tool="get_weather", args={"city": Eq("Paris")}, results={"get_weather": SUNNY},
          schema=obj(city=S, temperature=N, condition=S),
          fields={"city": Eq("Paris"), "temperature": 18, "condition": Eq("sunny")}),
    _case("json-sentiment", 'Classify the sentiment of: "I absolutely love this phone"', [],
          schema=obj(sentiment={"type": "string",
                                 "enum": ["positive", "negative", "neutral"]}),
          fields={"sentiment": Eq("positive")}),
]  # fmt: skip

SEVERAL_TOOLS_CASES = [
    _case("chain-weather-then-email", "Check the weather in Paris and email it to "
          "bob@example.com.", tool=("get_weather", "send_email"),
          args=[{"city": "Paris"}, {"to": Eq("bob@example.com"), "body": "18"}],
          results={"get_weather": SUNNY, "send_email": SENT}, says=["bob@example.com"]),
    _case("two-questions", "What's 6 times 7, and what's the weather in Oslo?",
          tool=("multiply", "get_weather"), ordered=False,
          args=[{"a": 6, "b": 7}, {"city": "Oslo"}],
          results={"multiply": "42", "get_weather": '{"temperature": -2, "condition": "snow"}'},
          says=["42", "-2", "Oslo"]),
]  # fmt: skip

CASES: list[Case] = [
    *WEATHER_CASES, *ARITHMETIC_CASES, *EMAIL_CASES, *CALENDAR_CASES, *FLIGHT_CASES,
    *STOCK_CASES, *CURRENCY_CASES, *TRANSLATION_CASES, *FILE_CASES, *SHELL_CASES,
    *LOOKUP_CASES, *SMALL_TALK_CASES, *FOLLOW_UP_CASES, *STRUCTURED_CASES, *SEVERAL_TOOLS_CASES,
]  # fmt: skip
