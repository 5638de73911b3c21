# Owns the default model's word lists: concepts (what a word of a prompt or of a tool's name or
# description is about: the weather, arithmetic, e-mail, ...), the places, currencies, tickers,
# languages, first names, months and weekdays it recognises, and a small glossary. Plain data.
from __future__ import annotations

from typing import Final

# fmt: off
#: word (lower case; looked up as written, then stemmed by understand.text.stem) -> concept
_CONCEPT_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "weather": ("weather", "temperature", "forecast", "rain", "raining", "sunny", "snow",
                "wind", "windy", "humid", "humidity", "degree", "celsius", "fahrenheit",
                "cold", "hot", "warm", "umbrella", "climate"),
    "math": ("multiply", "multiplication", "times", "product", "add", "addition", "plus", "sum",
             "subtract", "minus", "divide", "divided", "division", "calculate", "calculator",
             "compute", "arithmetic", "math", "square", "root", "power", "percent",
             "percentage", "total", "equal", "sqrt", "number", "operand"),
    "email": ("email", "mail", "inbox", "recipient", "subject", "cc", "bcc"),
    "calendar": ("calendar", "event", "meeting", "schedule", "appointment", "remind",
                 "reminder", "agenda", "invite"),
    "travel": ("flight", "fly", "airline", "airport", "plane", "depart", "departure",
               "arrival", "origin", "destination", "trip", "ticket", "hotel"),
    "stock": ("stock", "share", "ticker", "market", "trading", "nasdaq", "nyse", "equity",
              "quote", "symbol"),
    "currency": ("currency", "convert", "conversion", "exchange", "rate", "dollar", "euro",
                 "yen", "pound", "money", "fx"),
    "translate": ("translate", "translation", "language"),
    "file": ("file", "read", "content", "open", "path", "document"),
    "contact": ("user", "contact", "profile", "account", "person", "employee", "customer",
                "phone"),
    "time": ("clock", "timezone", "zone"),
    "define": ("define", "definition", "dictionary", "meaning", "mean", "word", "synonym"),
    "news": ("news", "headline", "article"),
    "search": ("search", "web", "google", "lookup"),
}
# fmt: on
CONCEPTS: Final = {w: c for c, words in _CONCEPT_WORDS.items() for w in words}

# fmt: off
PLACES: Final = frozenset("""
paris london berlin madrid rome lisbon tokyo kyoto osaka seoul beijing shanghai delhi mumbai
sydney melbourne toronto vancouver montreal boston chicago denver seattle austin dallas
houston miami atlanta phoenix portland detroit oslo stockholm copenhagen helsinki dublin
amsterdam brussels vienna prague warsaw budapest athens istanbul cairo nairobi lagos dubai
singapore bangkok hanoi manila jakarta zurich geneva munich hamburg milan barcelona seville
porto edinburgh manchester reykjavik moscow kyiv lima bogota santiago mexico havana france
germany spain italy japan china india canada brazil australia england scotland ireland
norway sweden finland denmark portugal greece egypt kenya nigeria argentina chile peru
""".split())  # noqa: SIM905
# fmt: on
MULTIWORD_PLACES: Final = (
    "New York",
    "San Francisco",
    "Los Angeles",
    "Las Vegas",
    "San Diego",
    "Hong Kong",
    "Buenos Aires",
    "Rio de Janeiro",
    "Cape Town",
    "Mexico City",
    "New Delhi",
    "Tel Aviv",
    "Washington",
)

CURRENCIES: Final = frozenset(
    [
        "USD",
        "EUR",
        "GBP",
        "JPY",
        "CHF",
        "CAD",
        "AUD",
        "NZD",
        "CNY",
        "INR",
        "BRL",
        "MXN",
        "SEK",
        "NOK",
        "DKK",
        "PLN",
        "KRW",
        "SGD",
        "HKD",
        "ZAR",
        "TRY",
    ]
)
CURRENCY_NAMES: Final = {
    "dollar": "USD",
    "dollars": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "pound": "GBP",
    "pounds": "GBP",
    "sterling": "GBP",
    "yen": "JPY",
    "franc": "CHF",
    "francs": "CHF",
    "yuan": "CNY",
    "rupee": "INR",
    "rupees": "INR",
}
CURRENCY_SYMBOLS: Final = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}

#: Company names to tickers.
COMPANIES: Final = {
    "apple": "AAPL",
    "microsoft": "MSFT",
    "google": "GOOGL",
    "alphabet": "GOOGL",
    "amazon": "AMZN",
    "tesla": "TSLA",
    "nvidia": "NVDA",
    "meta": "META",
    "netflix": "NFLX",
    "intel": "INTC",
    "ibm": "IBM",
}
#: Upper-case words that are not tickers.
NOT_TICKERS: Final = frozenset(
    [
        "I",
        "A",
        "OK",
        "AM",
        "PM",
        "API",
        "JSON",
        "HTTP",
        "URL",
        "CSV",
        "PDF",
        "USA",
        "UK",
        "EU",
        "AI",
        "ID",
        "UTC",
        "GMT",
        "TV",
        "FAQ",
        "CEO",
        "CTO",
        "ASAP",
        "FYI",
        "PR",
        "CI",
        "CLI",
        "SQL",
        "HTML",
        "CSS",
        "README",
        "TODO",
        "NOTE",
    ]
)

LANGUAGES: Final = (
    "English",
    "French",
    "Spanish",
    "German",
    "Italian",
    "Portuguese",
    "Dutch",
    "Japanese",
    "Chinese",
    "Korean",
    "Russian",
    "Arabic",
    "Hindi",
    "Swedish",
    "Norwegian",
    "Polish",
    "Greek",
    "Turkish",
)
LANGUAGE_CODES: Final = {
    "English": "en",
    "French": "fr",
    "Spanish": "es",
    "German": "de",
    "Italian": "it",
    "Portuguese": "pt",
    "Dutch": "nl",
    "Japanese": "ja",
    "Chinese": "zh",
    "Korean": "ko",
    "Russian": "ru",
    "Arabic": "ar",
    "Hindi": "hi",
    "Swedish": "sv",
    "Norwegian": "no",
    "Polish": "pl",
    "Greek": "el",
    "Turkish": "tr",
}

# fmt: off
FIRST_NAMES: Final = frozenset("""
alice bob carol dave david eve frank grace heidi ivan judy mallory oscar peggy sam sarah
sybil trent victor walter anna maria john jane james mary michael linda robert patricia
william elizabeth richard jennifer thomas susan charles jessica daniel karen matthew nancy
mark lisa paul emma olivia liam noah sophia mia lucas ethan chloe zoe tom tim kate ben max
leo nina priya raj wei li yuki hana omar fatima ahmed sofia lars ingrid pierre marie hans
klaus alex jordan taylor casey riley morgan jamie chris pat kim lee
""".split())  # noqa: SIM905
# fmt: on

MONTHS: Final = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
WEEKDAYS: Final = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

#: A few subjects the model can explain in a sentence or two.
GLOSSARY: Final = {
    "recursion": "Recursion is when a function solves a problem by calling itself on a "
    "smaller piece of the same problem, until it reaches a base case simple enough to answer "
    "directly. Each call waits for the one below it, and the results are combined on the way "
    "back up; computing a factorial, walking a tree and merge sort are classic examples.",
    "api": "An API (application programming interface) is a contract that lets one program "
    "ask another for data or actions without knowing how it works inside: the caller sends a "
    "request in an agreed shape and gets a response back.",
    "http": "HTTP is the request-and-response protocol of the web: a client sends a method "
    "such as GET or POST with a path and headers, and the server answers with a status code, "
    "headers and a body.",
    "dns": "DNS is the internet's phone book: it turns a name like example.com into the IP "
    "address a computer needs to connect, asking a chain of servers from the root down.",
    "photosynthesis": "Photosynthesis is how plants, algae and some bacteria turn light into "
    "chemical energy: they take in carbon dioxide and water and, using sunlight, make glucose "
    "and release oxygen.",
    "gravity": "Gravity is the attraction between masses: it keeps us on the ground, holds the "
    "Moon in orbit around the Earth and the planets around the Sun. Einstein described it as "
    "the curving of space and time by mass.",
    "inflation": "Inflation is the general rise in prices over time, which means each unit of "
    "money buys a little less. Central banks usually aim to keep it low and steady, around two "
    "percent a year.",
    "machine learning": "Machine learning is a way of building software that learns patterns "
    "from examples instead of following hand-written rules: a model is trained on data, then "
    "used to make predictions on new inputs.",
    "blockchain": "A blockchain is a shared ledger kept by many computers at once: records are "
    "grouped into blocks, each linked to the one before by a cryptographic hash, so past "
    "entries are very hard to change.",
    "encryption": "Encryption scrambles data with a key so that only someone holding the right "
    "key can read it; it protects messages in transit and files at rest.",
    "a hash function": "A hash function maps data of any size to a fixed-size value, the same "
    "input always giving the same output, so it is useful for lookups and integrity checks.",
    "tcp": "TCP is the transport protocol that gives two programs a reliable, ordered stream "
    "of bytes over the internet, resending lost packets and controlling the pace.",
    "a black hole": "A black hole is a region of space where matter is packed so densely that "
    "nothing, not even light, can escape its gravity once past the event horizon.",
    "climate change": "Climate change is the long-term shift in global temperatures and "
    "weather patterns, driven mainly by the greenhouse gases released by burning fossil fuels.",
    "python": "Python is a general-purpose programming language known for its readable "
    "syntax and large standard library; it is widely used for scripting, web services, data "
    "analysis and machine learning.",
    "git": "Git is a version control system: it records snapshots of a project as commits, "
    "lets you work on branches and merge them, and keeps the full history on every clone.",
    "docker": "Docker packages an application with everything it needs to run into a "
    "container image, so it behaves the same on a laptop, a test server and in production.",
    "a neural network": "A neural network is a model made of layers of simple units whose "
    "connection weights are adjusted during training so that the network maps inputs to the "
    "right outputs.",
}

#: Capitals the model knows (a small model knows these much).
CAPITALS: Final = {
    "france": "Paris",
    "germany": "Berlin",
    "spain": "Madrid",
    "italy": "Rome",
    "portugal": "Lisbon",
    "japan": "Tokyo",
    "china": "Beijing",
    "india": "New Delhi",
    "canada": "Ottawa",
    "australia": "Canberra",
    "brazil": "Brasília",
    "mexico": "Mexico City",
    "egypt": "Cairo",
    "kenya": "Nairobi",
    "norway": "Oslo",
    "sweden": "Stockholm",
    "finland": "Helsinki",
    "denmark": "Copenhagen",
    "ireland": "Dublin",
    "poland": "Warsaw",
    "greece": "Athens",
    "turkey": "Ankara",
    "russia": "Moscow",
    "ukraine": "Kyiv",
    "argentina": "Buenos Aires",
    "chile": "Santiago",
    "peru": "Lima",
    "south korea": "Seoul",
    "the united kingdom": "London",
    "the uk": "London",
    "england": "London",
    "scotland": "Edinburgh",
    "the united states": "Washington, D.C.",
    "the us": "Washington, D.C.",
    "the usa": "Washington, D.C.",
    "switzerland": "Bern",
    "austria": "Vienna",
    "the netherlands": "Amsterdam",
    "belgium": "Brussels",
    "nigeria": "Abuja",
    "south africa": "Pretoria",
    "new zealand": "Wellington",
    "vietnam": "Hanoi",
    "thailand": "Bangkok",
    "indonesia": "Jakarta",
}
