"""locate()'s built-in backends, one module each (perception plugins: harness_types.plugins);
each defines `make_backend(emb, urdf, url, timeout_s)` returning a `PerceptionBackend`."""
