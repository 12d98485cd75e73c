"""Long releases in this process: progress bars and stop points."""
