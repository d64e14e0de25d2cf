"""What the model decides: the decision cases routed, against the server's own tool calling, across
seeds, on the demo's questions, among distractors with a shortlist, and through a public
benchmark's own client with abstention."""
