"""Agent sessions as principals, and delivery of reports into their harnesses."""
