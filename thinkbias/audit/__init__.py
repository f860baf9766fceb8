"""The audit: one registry model on all three studies, and the report that reads their tables."""
