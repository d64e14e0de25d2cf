"""What several test modules share: the model the tests load, and reply bounds from grammars."""
