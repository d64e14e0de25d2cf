"""What the benchmark scripts share: the decision cases and how each is scored (``corpus``), the
hostile replies (``hostile``), a way's records scored and charted (``scoring``), the tokenizer and
model servers on loopback (``servers``), and a script of several ways run by the way it names
(``ways``). ``corpus``, ``hostile`` and ``scoring`` are what a test may import."""
