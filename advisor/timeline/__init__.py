"""Timeline: facts in order, grouped into runs (runs), each fact given its phase and its stage (frames,
excerpt) by the kinds of fact it groups by (kinds)."""
