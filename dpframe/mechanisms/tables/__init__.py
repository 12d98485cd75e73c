"""Post-processing of released tables, free: consistent totals and margins, shares."""
