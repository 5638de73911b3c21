# The wire protocol of the Responses API and of the append shape, sans-IO.
# Types, the codec, errors and event builders live here; nothing here opens a socket, starts a
# task or reads a clock (timestamps are passed in by the caller).
