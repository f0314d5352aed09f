"""The model loop, model clients, prompts, traces and the harness command."""
