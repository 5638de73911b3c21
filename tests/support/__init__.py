# The shared code of the test suite, importable from every test module as `support` (pytest's
# `pythonpath` option puts tests/ on the import path): servers, raw clients, the tool and event
# vocabulary of the tests, waits, hypothesis strategies. Nothing here is a test or a fixture.
