"""The `speculative-infra` command line."""
