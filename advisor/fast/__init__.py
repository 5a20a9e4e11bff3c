"""The fast path: the literal prefilter, parse-once line shapes, forked scanning and packed reports.

Only advisor.pipeline and advisor.stream import it; its results equal the plain path's, byte for byte."""
