"""Rules: the rule files, their expressions, the arithmetic their texts and flags use, and matching over runs."""
