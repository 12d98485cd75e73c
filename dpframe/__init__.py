"""dpframe: differentially private exploration of pandas DataFrames."""
