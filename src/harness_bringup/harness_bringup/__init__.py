"""Composing the harness's node graph: domains, processes, launch files, the harness command."""
