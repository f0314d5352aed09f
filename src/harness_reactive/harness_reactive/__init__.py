"""Guards, watches, controllers and the per-tick reactive stage with time budgets."""
