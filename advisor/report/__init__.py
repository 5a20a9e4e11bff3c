"""The report: its contract, the analysis that fills it, and the output formats."""
