"""CDK constructs. They call resolve + rules (never re-implement checks) and render L1 resources."""
