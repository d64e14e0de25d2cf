"""What the library costs: the parser and the schema, the parser's bounds, grammar compile times,
decoding a routed decision (forced tokens, grammars, unconstrained), batch runs, streaming and
MCP calls."""
