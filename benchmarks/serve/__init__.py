"""``toolrouting serve`` measured: the proxy's own cost and a streamed call's first chunk, and an
agent framework's own standard tests through it."""
