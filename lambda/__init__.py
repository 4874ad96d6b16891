"""AWS Lambda handlers, one folder per function, shipped as plain folder assets.

This folder installs as the `speculative_infra_lambda` package (see setup.py), so the constructs find it
through the installed distribution. Each function folder is a package whose modules import one another
relatively: Lambda runs it as `<folder>.handler.<function>` from the asset root. Standard library and
boto3/botocore only, plus the benchmark engine for endpoint_benchmark, endpoint_canary and
retraining_evaluate (copied into their assets).
"""
