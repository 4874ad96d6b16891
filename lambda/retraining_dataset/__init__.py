"""Turn an endpoint's captured traffic into an EAGLE training dataset (ShareGPT JSON lines)."""
