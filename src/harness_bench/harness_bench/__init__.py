"""Bench tasks as data and pure code: scenes, layouts, instructions, success checks."""
