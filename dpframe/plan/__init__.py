"""Plain data, compared by value: expressions, the declared schema, plan steps and release nodes."""
