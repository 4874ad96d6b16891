"""Makes scripts/ a package for lint-imports only; the commands here are run as files."""
