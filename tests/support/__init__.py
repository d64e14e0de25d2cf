"""What several test modules share: the model the tests load, reply bounds from grammars, and the
loop tests' conversation and catalogue."""
