"""The bounded-execution engine, the skills and the skill server node."""
