"""Private selection (permute-and-flip): the most frequent category and group argmax."""
